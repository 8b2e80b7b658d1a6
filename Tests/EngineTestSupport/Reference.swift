import Foundation

/// Independent references for the engine tests: direct time-domain convolution in Double.
public enum Reference {
    /// y[n] = Σ h[m] x[n - m], for n in 0..<x.count; skips zero input samples (sparse inputs are cheap).
    public static func convolve(_ x: [Float], _ h: [Float], outputLength: Int? = nil) -> [Double] {
        let length = outputLength ?? x.count
        var y = [Double](repeating: 0, count: length)
        for m in x.indices where x[m] != 0 {
            let xm = Double(x[m])
            let end = min(h.count, length - m)
            if end <= 0 { continue }
            for k in 0..<end { y[m + k] += xm * Double(h[k]) }
        }
        return y
    }

    /// Relative error of `actual` against `expected`, in dB of energy (−∞ when exact).
    public static func relativeErrorDB(_ actual: [Float], _ expected: [Double]) -> Double {
        var error = 0.0, energy = 0.0
        for n in expected.indices {
            let difference = Double(actual[n]) - expected[n]
            error += difference * difference
            energy += expected[n] * expected[n]
        }
        if error == 0 { return -.infinity }
        return 10 * log10(error / max(energy, 1e-300))
    }
}
