import Glibc

/// Impulse responses that need no file, made at the requested sample rate: `builtin:NAME`.
enum BuiltinImpulseResponse: String, CaseIterable {
    /// Mono, one sample of 1.0: the identity filter.
    case dirac
    /// A synthetic stereo concert hall; see `makeHall`.
    case hall
    /// Mono, a 90° phase shifter; see `makeHilbert`.
    case hilbert

    /// filter-chain's spellings of the same built-ins: `filename = "/dirac"`, `"/hilbert"`.
    init?(filterChainName name: String) {
        guard name.hasPrefix("/"), let builtin = Self(rawValue: String(name.dropFirst())), builtin != .hall else { return nil }
        self = builtin
    }

    /// `length`: frames asked for by the `length` option (0: not given); only the Hilbert
    /// transformer is made to that length, as in filter-chain.
    func make(sampleRate: Double, length: Int = 0) -> [[Float]] {
        switch self {
        case .dirac: return [[1]]
        case .hall: return Self.makeHall(sampleRate: sampleRate)
        case .hilbert: return [Self.makeHilbert(length: length > 0 ? length : 1024)]
        }
    }

    /// filter-chain's Hilbert transformer, sample for sample: odd taps (2/π)/i around the centre
    /// frame length/2, antisymmetric, under a raised-cosine window (0.43 + 0.57·cos). Linear
    /// phase: it delays by length/2 frames.
    static func makeHilbert(length: Int) -> [Float] {
        var samples = [Float](repeating: 0, count: max(1, length))
        let half = length / 2
        let gain = 2 / Float.pi
        for i in stride(from: 1, to: half, by: 2) {
            let value = (gain / Float(i)) * (0.43 + 0.57 * cosf(Float(i) * Float.pi / Float(half)))
            samples[half + i] = -value
            samples[half - i] = value
        }
        return samples
    }

    /// Parameters of `builtin:hall`.
    enum Hall {
        static let lengthSeconds = 3.0
        /// Silence before the first reflection (no direct sound: the IR is the wet part only).
        static let preDelaySeconds = 0.015
        /// Early reflections fall between the pre-delay and this time.
        static let earlyReflectionsEndSeconds = 0.080
        static let earlyReflectionCount = 8
        /// The time for the tail to decay by 60 dB.
        static let rt60Seconds = 2.5
        /// The diffuse tail starts at the pre-delay and builds up over this time (raised cosine).
        static let tailBuildUpSeconds = 0.060
        /// The last part fades out (raised cosine), ending at -72 dB anyway.
        static let fadeOutSeconds = 0.1
        /// Damping: a one-pole lowpass over the tail whose cutoff starts at `start`, halves every
        /// `halvingSeconds` and stops falling at `floor`, so high frequencies die away sooner, as
        /// in a real hall (air and wall absorption).
        static let dampingCutoff = (startHz: 12_000.0, halvingSeconds: 0.5, floorHz: 1_500.0)
        /// One independent noise stream per channel (decorrelated left and right).
        static let seeds: [UInt64] = [0x5EED_1EF7, 0x5EED_2167]
    }

    /// `builtin:hall`: two channels of `Hall.lengthSeconds`, deterministic for a given rate.
    ///
    /// Per channel: silence for the pre-delay; `earlyReflectionCount` single-sample reflections at
    /// random times up to 80 ms, decreasing in level, random polarity; a noise tail whose
    /// amplitude decays as exp(-3·ln(10)·t / RT60) (60 dB in 2.5 s) from the pre-delay on,
    /// built up over 60 ms, lowpass-damped (12 kHz falling to 1.5 kHz; the lowpass is
    /// power-compensated so the broadband decay keeps its RT60 and only the treble decays faster). Both channels are then scaled by one factor so that the louder one
    /// has total energy 1 (white noise keeps its power; peaks stay well below 1).
    static func makeHall(sampleRate: Double) -> [[Float]] {
        let frameCount = Int((Hall.lengthSeconds * sampleRate).rounded())
        let preDelayFrame = Int((Hall.preDelaySeconds * sampleRate).rounded())
        let decayPerSecond = 3 * log(10.0) / Hall.rt60Seconds
        let buildUpFrames = max(1, Int(Hall.tailBuildUpSeconds * sampleRate))
        let fadeOutFrames = max(1, Int(Hall.fadeOutSeconds * sampleRate))
        let maxCutoff = 0.45 * sampleRate  // below Nyquist at any rate

        var channels: [[Float]] = []
        for seed in Hall.seeds {
            var random = SplitMix64(seed: seed)
            var samples = [Float](repeating: 0, count: frameCount)

            // Diffuse tail: damped, decaying white noise (uniform with unit variance).
            var lowpassState = 0.0
            for frame in preDelayFrame..<frameCount {
                let seconds = Double(frame - preDelayFrame) / sampleRate
                let damped = Hall.dampingCutoff.startHz * exp2(-seconds / Hall.dampingCutoff.halvingSeconds)
                let cutoff = min(maxCutoff, max(Hall.dampingCutoff.floorHz, damped))
                let pole = exp(-2 * Double.pi * cutoff / sampleRate)
                // White noise through y = (1-p)x + p·y has power (1-p)/(1+p): undo that.
                let powerCompensation = ((1 + pole) / (1 - pole)).squareRoot()
                let noise = (random.nextUnit() * 2 - 1) * 3.0.squareRoot()
                lowpassState = (1 - pole) * noise + pole * lowpassState
                var envelope = exp(-decayPerSecond * seconds)
                let sinceOnset = frame - preDelayFrame
                if sinceOnset < buildUpFrames {
                    envelope *= 0.5 - 0.5 * cos(Double.pi * Double(sinceOnset) / Double(buildUpFrames))
                }
                let untilEnd = frameCount - 1 - frame
                if untilEnd < fadeOutFrames {
                    envelope *= 0.5 - 0.5 * cos(Double.pi * Double(untilEnd) / Double(fadeOutFrames))
                }
                samples[frame] = Float(lowpassState * powerCompensation * envelope)
            }

            // Early reflections: sparse, loud against the young tail, quieter the later they come.
            let earlyStart = Double(preDelayFrame)
            let earlyEnd = Hall.earlyReflectionsEndSeconds * sampleRate
            for _ in 0..<Hall.earlyReflectionCount {
                let position = random.nextUnit()
                let frame = Int(earlyStart + position * (earlyEnd - earlyStart))
                let polarity: Double = random.nextUnit() < 0.5 ? -1 : 1
                let level = 6 * (1 - 0.6 * position) * (0.5 + 0.5 * random.nextUnit())
                if frame < frameCount { samples[frame] += Float(polarity * level) }
            }
            channels.append(samples)
        }

        let largestEnergy = channels.map { $0.reduce(0.0) { $0 + Double($1) * Double($1) } }.max() ?? 0
        let scale = Float(1 / largestEnergy.squareRoot())
        return channels.map { $0.map { $0 * scale } }
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): a small, fast, seedable generator, so built-in IRs come
/// out the same on every run and machine.
struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// Uniform in [0, 1), 53 bits.
    mutating func nextUnit() -> Double {
        Double(next() >> 11) * 0x1p-53
    }
}
