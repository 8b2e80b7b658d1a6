// What a graph's nodes read from files, at the graph's rate, as filter-chain reads them.
import Convolution
import ConvolverGraph
import Glibc

/// Reads each IR file once per set of options, with all its channels; a convolver takes its
/// `channel` (default: its instance's index) modulo the file's channels, as filter-chain does. A
/// spatializer's HRTF set is read as filter-chain's reads it (libmysofa's `mysofa_open` at the
/// graph's rate), once per file (the factory's cache).
final class GraphFileReader {
    private let factory: EngineFactory
    private let configuration: NodeConfiguration
    private let sampleRate: Int
    let rules: FilterChainRules
    private var loaded: [String: ImpulseResponse] = [:]

    init(factory: EngineFactory, configuration: NodeConfiguration, sampleRate: Int, rules: FilterChainRules) {
        self.factory = factory
        self.configuration = configuration
        self.sampleRate = sampleRate
        self.rules = rules
    }

    func read(_ node: String, _ request: FileRequest) throws(ConvolverNodeError) -> [Double] {
        switch request {
        case .impulse(let impulse, let instance):
            let spec = ImpulseResponse.closestInRate(
                impulse.filenames[0], impulse.filenames.count > 1 ? impulse.filenames : [], to: Double(sampleRate))
            let options = try impulse.loadOptions(
                sampleRate: sampleRate, delaysThroughSeconds: rules.delaysThroughSeconds,
                preRinging: configuration.resamplePreRinging)
            let cacheKey = "\(spec) \(options)"
            let response: ImpulseResponse
            if let cached = loaded[cacheKey] {
                response = cached
            } else {
                response = try EngineFactory.load(spec, key: "filter.graph node '\(node)' filename", sampleRate: sampleRate, options: options)
                loaded[cacheKey] = response
            }
            return response.channels[(impulse.channel ?? instance) % response.channelCount].map(Double.init)
        case .ear(let spatializer, let right):
            let set: HRTFSet
            do {
                set = try factory.hrtfSets.set(path: spatializer.filename, normalizedAt: Double(sampleRate))
            } catch {
                throw .impulseResponse(key: "filter.graph node '\(node)' filename", message: "\(error)", errno: EINVAL)
            }
            let ears = set.filters(for: spatializer.direction)
            return (right ? ears.right : ears.left).map(Double.init)
        }
    }
}
