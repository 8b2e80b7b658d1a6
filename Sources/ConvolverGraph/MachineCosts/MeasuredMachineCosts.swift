import Convolution

/// This machine's costs, as the node and the CLI plan with: measured once per process, then the
/// median of that and the last measurements on this CPU model (`MachineCostsHistory`, a file in
/// the user's cache). One measurement alone varies enough on a busy or virtual machine that
/// near-equal plans flipped from process to process; the median of several is a typical
/// measurement, as the placement limits and the helper overhead were calibrated against, and steady.
/// Tests and offline uses plan with fixed costs instead (`MachineCosts.typical`).
public enum MeasuredMachineCosts {
    /// If the machine cannot even be measured (no memory for the kernels' arrays), the typical costs:
    /// a plan from them is slower on some machines, never wrong.
    public static let thisMachine: MachineCosts = {
        guard let measurement = try? MachineCosts.measure(fftSizes: (6...15).map { 1 << $0 }) else { return .typical }
        let history = MachineCostsHistory()
        let measurements = history.load() + [measurement]
        history.save(measurements)
        return median(of: measurements.suffix(MachineCostsHistory.kept))
    }()

    /// Each cost the median of those `measurements` that have it (the mean of the middle two
    /// for an even count). `measurements` must not be empty.
    static func median(of measurements: some Collection<MachineCosts>) -> MachineCosts {
        func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            return (sorted[(sorted.count - 1) / 2] + sorted[sorted.count / 2]) / 2
        }
        let sizes = Set(measurements.flatMap(\.fftPairNanoseconds.keys))
        return MachineCosts(
            fftPairNanoseconds: Dictionary(
                uniqueKeysWithValues: sizes.map { size in
                    (size, median(measurements.compactMap { $0.fftPairNanoseconds[size] }))
                }),
            multiplyAddNanosecondsPerBin: median(measurements.map(\.multiplyAddNanosecondsPerBin)),
            directTapNanoseconds: median(measurements.map(\.directTapNanoseconds)))
    }
}
