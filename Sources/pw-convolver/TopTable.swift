// The table `pw-convolver top` prints.
import Convolution
import ConvolverNode

/// The table: one line per node, name last (it may contain spaces), times in µs.
enum TopTable {
    static let header = "S    ID  QUANT   RATE CYCLES  WAIT-AVG  WAIT-P99  WAIT-MAX  BUSY-AVG  BUSY-P99  BUSY-MAX   B/Q  LATE  NAME"

    static func line(_ node: NodeStatistics) -> String {
        func time(_ value: Double?) -> String { pad(value.map { String(cFormat: "%.1f", $0) } ?? "-", 9) }
        let wait = Summary(node.waitMicroseconds)
        let busy = Summary(node.busyMicroseconds)
        let role = node.cycles == 0 ? "I" : (node.isDriver ? "D" : "F")
        let ratio = node.busyPerQuantum.map { String(cFormat: "%.3f", $0) } ?? "-"
        return [
            role, pad("\(node.id)", 5), pad(node.quantum > 0 ? "\(node.quantum)" : "-", 6),
            pad(node.rate > 0 ? "\(node.rate)" : "-", 6), pad("\(node.cycles)", 6),
            time(wait?.average), time(wait?.p99), time(wait?.max),
            time(busy?.average), time(busy?.p99), time(busy?.max),
            pad(ratio, 5), pad("\(node.lateCycles)", 5), " " + node.name,
        ].joined(separator: " ")
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }
}
