import CMySofa
import Glibc

/// Where a source is, as AES69 (SOFA) spherical coordinates: azimuth in degrees counter-clockwise
/// from straight ahead (90 = left), elevation in degrees up from the horizontal plane, distance in
/// metres (nil: the distance the set was measured at).
public struct SourceDirection: Equatable, Sendable {
    public var azimuth: Double
    public var elevation: Double
    public var radius: Double?

    public init(azimuth: Double = 0, elevation: Double = 0, radius: Double? = nil) {
        self.azimuth = azimuth
        self.elevation = elevation
        self.radius = radius
    }

    /// This direction turned by `other`'s angles (a speaker's direction as the head sees it).
    public func rotated(by other: SourceDirection) -> SourceDirection {
        SourceDirection(
            azimuth: azimuth + other.azimuth, elevation: min(90, max(-90, elevation + other.elevation)),
            radius: other.radius ?? radius)
    }
}

/// A set of head-related impulse responses from a SOFA file (AES69, SimpleFreeFieldHRIR), read by
/// libmysofa at the file's own rate (the caller resamples like any IR), or as `mysofa_open` reads it. The C calls to libmysofa
/// live here. Filters for directions between measurements are libmysofa's interpolation of the
/// neighbouring measurements (its `mysofa_interpolate`, as `mysofa_getfilter_float` does, without
/// the loudness normalisation of `mysofa_open`).
public final class HRTFSet {
    public let path: String
    public let sampleRate: Double
    /// Taps per filter, at `sampleRate`.
    public let filterLength: Int
    public let measurementCount: Int
    /// The measured sources' ranges (degrees, metres).
    public let elevationRange: ClosedRange<Double>
    public let radiusRange: ClosedRange<Double>

    private let hrtf: UnsafeMutablePointer<MYSOFA_HRTF>
    private let lookup: UnsafeMutablePointer<MYSOFA_LOOKUP>
    private let neighborhood: UnsafeMutablePointer<MYSOFA_NEIGHBORHOOD>

    /// Whether `spec` names a SOFA file (by its extension, as users name them).
    public static func isSOFA(_ spec: String) -> Bool {
        spec.lowercased().hasSuffix(".sofa")
    }

    /// With `normalizedAt`, the set is read as libmysofa's `mysofa_open` reads it (and so
    /// filter-chain's spatializer): resampled to that rate by libmysofa, then loudness-normalized
    /// (every filter scaled so that the frontal one has libmysofa's reference loudness).
    public init(path: String, normalizedAt targetRate: Double? = nil) throws(ImpulseResponseError) {
        self.path = path
        guard access(path, F_OK) == 0 else { throw .fileNotFound(path: path) }
        guard access(path, R_OK) == 0 else { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
        var error: Int32 = 0
        guard let hrtf = mysofa_load(path, &error) else {
            throw .notSOFA(path: path, reason: Self.describe(error))
        }
        error = mysofa_check(hrtf)
        guard Int(error) == MYSOFA_OK else {
            mysofa_free(hrtf)
            throw .notSOFA(path: path, reason: Self.describe(error))
        }
        let m = Int(hrtf.pointee.M), r = Int(hrtf.pointee.R), c = Int(hrtf.pointee.C)
        guard r == 2, m > 0, hrtf.pointee.N > 0, c == 3, hrtf.pointee.DataSamplingRate.elements == 1,
            Int(hrtf.pointee.DataIR.elements) == m * r * Int(hrtf.pointee.N), Int(hrtf.pointee.SourcePosition.elements) == m * c
        else {
            mysofa_free(hrtf)
            throw .notSOFA(
                path: path,
                reason: "expected 2 receivers (ears) and one sample rate, found \(r) receivers, "
                    + "\(hrtf.pointee.DataSamplingRate.elements) rates")
        }
        guard ImpulseResponse.sourceRateRange.contains(Double(hrtf.pointee.DataSamplingRate.values[0])) else {
            mysofa_free(hrtf)
            throw .notSOFA(path: path, reason: "its sample rate \(hrtf.pointee.DataSamplingRate.values[0]) Hz is outside the rates accepted")
        }
        if let targetRate {
            error = mysofa_resample(hrtf, Float(targetRate))
            guard Int(error) == MYSOFA_OK else {
                mysofa_free(hrtf)
                throw .notSOFA(path: path, reason: "libmysofa cannot resample it to \(targetRate) Hz: \(Self.describe(error))")
            }
            _ = mysofa_loudness(hrtf)
        }
        let n = Int(hrtf.pointee.N), rate = Double(hrtf.pointee.DataSamplingRate.values[0])
        // The grid in spherical coordinates (as the file usually stores it), then cartesian for the lookup.
        mysofa_tospherical(hrtf)
        let positions = UnsafeBufferPointer(start: hrtf.pointee.SourcePosition.values, count: m * c)
        let elevations = stride(from: 1, to: m * c, by: 3).map { Double(positions[$0]) }
        let radii = stride(from: 2, to: m * c, by: 3).map { Double(positions[$0]) }
        mysofa_tocartesian(hrtf)
        guard let lookup = mysofa_lookup_init(hrtf) else {
            mysofa_free(hrtf)
            throw .notSOFA(path: path, reason: "libmysofa cannot index its source positions")
        }
        guard let neighborhood = mysofa_neighborhood_init(hrtf, lookup) else {
            mysofa_lookup_free(lookup)
            mysofa_free(hrtf)
            throw .notSOFA(path: path, reason: "libmysofa cannot find the neighbours of its source positions")
        }
        (self.hrtf, self.lookup, self.neighborhood) = (hrtf, lookup, neighborhood)
        sampleRate = rate
        filterLength = n
        measurementCount = m
        elevationRange = (elevations.min() ?? 0)...(elevations.max() ?? 0)
        radiusRange = (radii.min() ?? 0)...(radii.max() ?? 0)
    }

    deinit {
        mysofa_neighborhood_free(neighborhood)
        mysofa_lookup_free(lookup)
        mysofa_free(hrtf)
    }

    /// The left and right ear's filters for a source at `direction`, at `sampleRate`, each with
    /// its ear's delay (the file's Data.Delay, if any) as leading zeros.
    public func filters(for direction: SourceDirection) -> (left: [Float], right: [Float]) {
        let radius = direction.radius ?? radiusRange.upperBound
        var coordinate: [Float] = [Float(direction.azimuth), Float(direction.elevation), Float(radius)]
        mysofa_s2c(&coordinate)
        let nearest = mysofa_lookup(lookup, &coordinate)
        var taps = [Float](repeating: 0, count: 2 * filterLength)
        var delays: [Float] = [0, 0]
        if nearest >= 0, let neighbours = mysofa_neighborhood(neighborhood, nearest) {
            _ = mysofa_interpolate(hrtf, &coordinate, nearest, neighbours, &taps, &delays)
        }
        // Data.Delay is in samples (AES69; libmysofa's resampler scales it with the rate), whole
        // samples here: a fractional ITD is already in the measured filters of most sets.
        func withDelay(_ filter: ArraySlice<Float>, _ samples: Float) -> [Float] {
            let frames = samples.isFinite ? max(0, min(Int(samples.rounded()), filterLength * 4)) : 0
            return [Float](repeating: 0, count: frames) + filter
        }
        return (withDelay(taps[0..<filterLength], delays[0]), withDelay(taps[filterLength...], delays[1]))
    }

    private static func describe(_ error: Int32) -> String {
        switch Int(error) {
        case MYSOFA_INVALID_FORMAT: return "not a SOFA (netCDF-4/HDF5) file, or not one libmysofa reads"
        case MYSOFA_UNSUPPORTED_FORMAT: return "a SOFA convention libmysofa does not support"
        case MYSOFA_NO_MEMORY: return "out of memory"
        case MYSOFA_READ_ERROR: return "read error"
        case MYSOFA_INVALID_ATTRIBUTES: return "invalid attributes (not SimpleFreeFieldHRIR?)"
        case MYSOFA_INVALID_DIMENSIONS, MYSOFA_INVALID_DIMENSION_LIST: return "invalid dimensions"
        case MYSOFA_INVALID_COORDINATE_TYPE: return "invalid coordinate type"
        case MYSOFA_ONLY_THE_SAME_SAMPLING_RATE_SUPPORTED: return "more than one sample rate"
        case MYSOFA_INVALID_RECEIVER_POSITIONS: return "invalid receiver (ear) positions"
        default: return "libmysofa error \(error)"
        }
    }
}
