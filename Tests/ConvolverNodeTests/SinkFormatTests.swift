import CPipeWire
import XCTest

@testable import ConvolverNode

/// Sink mode's format: `audio.position` names read as SPA reads them (its own table).
final class SinkFormatTests: XCTestCase {
    func testPositionNamesAreSPAsOwn() throws {
        let names = ["FL", "FR", "FC", "LFE", "RL", "RR", "SL", "SR", "MONO", "TFL", "AUX0", "AUX63"]
        let expected: [spa_audio_channel] = [
            SPA_AUDIO_CHANNEL_FL, SPA_AUDIO_CHANNEL_FR, SPA_AUDIO_CHANNEL_FC, SPA_AUDIO_CHANNEL_LFE,
            SPA_AUDIO_CHANNEL_RL, SPA_AUDIO_CHANNEL_RR, SPA_AUDIO_CHANNEL_SL, SPA_AUDIO_CHANNEL_SR,
            SPA_AUDIO_CHANNEL_MONO, SPA_AUDIO_CHANNEL_TFL, SPA_AUDIO_CHANNEL_AUX0,
            spa_audio_channel(SPA_AUDIO_CHANNEL_AUX0.rawValue + 63),
        ]
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
        defer { buffer.deallocate() }
        let pod = try SinkTransport.buildFormat(positions: names, sampleRate: 48000, into: buffer)
        var info = spa_audio_info_raw()
        XCTAssertGreaterThanOrEqual(spa_format_audio_raw_parse(pod, &info), 0)
        XCTAssertEqual(info.rate, 48000)
        XCTAssertEqual(Int(info.channels), names.count)
        let positions = withUnsafeBytes(of: info.position) { Array($0.bindMemory(to: UInt32.self).prefix(names.count)) }
        XCTAssertEqual(positions, expected.map(\.rawValue))
    }

    func testUnknownPositionIsRefusedByName() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
        defer { buffer.deallocate() }
        for name in ["XYZ", "fl", "AUX64"] {
            XCTAssertThrowsError(try SinkTransport.buildFormat(positions: ["FL", name], sampleRate: 48000, into: buffer)) {
                XCTAssertTrue("\($0)".contains("'\(name)' is not a channel position"), "\($0)")
            }
        }
    }
}
