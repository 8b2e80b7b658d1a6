// Where filter-chain's versions compute a graph differently, the compiled graph sounds as the
// running one does (users compare with what they heard before the switch).

/// The running filter-chain's rules for what a graph computes.
public struct FilterChainRules: Sendable, Equatable {
    /// Whose biquad formulas (0.3.x's or 1.x's).
    public var biquadFormulas: Biquad.Formulas
    /// 1.x reads a convolver's whole-number `delay` as samples through seconds (7 at 48 kHz become 6).
    public var delaysThroughSeconds: Bool
    /// A mixer with one connected input of non-zero gain scales it by that gain; 0.3.61 to 0.3.80
    /// copy it unscaled (dsp_mix_gain's one-source case; fixed in 0.3.81).
    public var mixerScalesALoneInput: Bool

    public init(biquadFormulas: Biquad.Formulas, delaysThroughSeconds: Bool, mixerScalesALoneInput: Bool) {
        self.biquadFormulas = biquadFormulas
        self.delaysThroughSeconds = delaysThroughSeconds
        self.mixerScalesALoneInput = mixerScalesALoneInput
    }

    /// The rules of filter-chain in `version`.
    public init(_ version: PipeWireVersion) {
        self.init(
            biquadFormulas: version.isOneDotX ? .pipeWire1 : .pipeWire03,
            delaysThroughSeconds: version.isOneDotX,
            mixerScalesALoneInput: !version.isAtLeast(0, 3, 61) || version.isAtLeast(0, 3, 81))
    }
}
