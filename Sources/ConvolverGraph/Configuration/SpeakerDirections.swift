import Convolution

/// Where each channel position's speaker stands, for placing inputs with an HRTF set (virtual
/// surround): ITU-R BS.775 / BS.2051 angles, AES69 azimuths (counter-clockwise, 90 = left).
/// LFE has none: it goes to both ears unfiltered.
package enum SpeakerDirections {
    private static let table: [(position: String, azimuth: Double, elevation: Double)] = [
        ("MONO", 0, 0), ("FC", 0, 0), ("FL", 30, 0), ("FR", -30, 0), ("FLC", 15, 0), ("FRC", -15, 0),
        ("SL", 90, 0), ("SR", -90, 0), ("RL", 150, 0), ("RR", -150, 0), ("RC", 180, 0),
        ("TFL", 45, 45), ("TFR", -45, 45), ("TFC", 0, 45), ("TC", 0, 90), ("TRL", 135, 45), ("TRR", -135, 45),
        ("TRC", 180, 45),
    ]

    static var known: [String] { table.map(\.position) }

    package static func direction(of position: String) -> SourceDirection? {
        table.first { $0.position == position }.map { SourceDirection(azimuth: $0.azimuth, elevation: $0.elevation) }
    }
}
