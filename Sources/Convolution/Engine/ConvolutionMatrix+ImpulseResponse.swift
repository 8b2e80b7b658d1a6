extension ConvolutionMatrix {
    /// The usual ways one IR file maps onto `channelCount` audio channels:
    /// - 1 IR channel: the same IR on every channel (its spectra are computed once per entry);
    /// - `channelCount` IR channels: channel i's IR on channel i;
    /// - 4 IR channels on 2 audio channels: true stereo, IR channels in the order
    ///   L→L, L→R, R→L, R→R (as jconvolver and HeSuVi-style true-stereo files use).
    public init(impulseResponse: ImpulseResponse, channelCount: Int) throws {
        let irChannels = impulseResponse.channels
        switch irChannels.count {
        case 1:
            self.init(
                inputCount: channelCount, outputCount: channelCount,
                entries: (0..<channelCount).map {
                    Entry(input: $0, output: $0, impulse: irChannels[0])
                })
        case channelCount:
            self.init(
                inputCount: channelCount, outputCount: channelCount,
                entries: (0..<channelCount).map {
                    Entry(input: $0, output: $0, impulse: irChannels[$0])
                })
        case 4 where channelCount == 2:
            self.init(
                inputCount: 2, outputCount: 2,
                entries: [
                    Entry(input: 0, output: 0, impulse: irChannels[0]), Entry(input: 0, output: 1, impulse: irChannels[1]),
                    Entry(input: 1, output: 0, impulse: irChannels[2]), Entry(input: 1, output: 1, impulse: irChannels[3]),
                ])
        default:
            throw ConvolutionMatrixError.channelMismatch(impulseChannels: irChannels.count, audioChannels: channelCount)
        }
    }
}
