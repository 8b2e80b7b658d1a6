import Convolution
import Glibc

/// The `inspect --svg` drawing: one self-contained SVG (inline style, no script, no dependency),
/// one row per IR channel with three plots. Each plot is a `<g class="plot KIND" id="channel-N-KIND">`
/// (KIND: waveform, magnitude, decay) holding its axes (`<g class="axes">`), its data as
/// `<polyline class="trace">`, and for the decay plot the RT60 fit as `<polyline class="fit">`.
enum SVGPlot {
    static let panelWidth = 500.0, panelHeight = 300.0, titleHeight = 40.0
    /// The plot area inside a panel: margins for tick labels and axis names.
    static let plotLeft = 62.0, plotTop = 30.0, plotWidth = 420.0, plotHeight = 220.0
    /// The lowest level the decay plot shows.
    static let decayFloorDB = -80.0
    static let magnitudePointCount = 300

    static func document(
        title: String, impulseResponse: ImpulseResponse, analysis: DecayAnalysis,
        responses: [MagnitudeResponse]
    ) -> String {
        let width = 3 * panelWidth
        let height = titleHeight + Double(impulseResponse.channelCount) * panelHeight
        let peak = Double(impulseResponse.channels.flatMap { $0 }.map(abs).max() ?? 0)
        var svg = """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(height)" viewBox="0 0 \(width) \(height)">
            <style>
              text { font-family: sans-serif; font-size: 11px; fill: #222; }
              .title { font-size: 16px; font-weight: bold; }
              .panel-title { font-size: 13px; font-weight: bold; }
              .frame { fill: none; stroke: #444; stroke-width: 1; }
              .grid { stroke: #ddd; stroke-width: 0.5; }
              .trace { fill: none; stroke: #1f5fa8; stroke-width: 1; }
              .fit { fill: none; stroke: #c0392b; stroke-width: 1.5; stroke-dasharray: 6 3; }
              .legend { fill: #c0392b; }
            </style>
            <rect width="100%" height="100%" fill="white"/>
            <text class="title" x="12" y="26">\(escaped(title))</text>

            """
        for (channel, samples) in impulseResponse.channels.enumerated() {
            let top = titleHeight + Double(channel) * panelHeight
            svg += waveform(samples, channel: channel, sampleRate: analysis.sampleRate, peak: peak, origin: (0, top))
            svg += magnitude(responses[channel], channel: channel, origin: (panelWidth, top))
            svg += decay(
                analysis.channels[channel], channel: channel, sampleRate: analysis.sampleRate,
                origin: (2 * panelWidth, top))
        }
        return svg + "</svg>\n"
    }

    // MARK: The three plots

    /// Min and max of the samples under each horizontal pixel, so a long IR still shows its envelope.
    static func waveform(
        _ samples: [Float], channel: Int, sampleRate: Double, peak: Double,
        origin: (Double, Double)
    ) -> String {
        let duration = Double(samples.count) / sampleRate
        let limit = peak > 0 ? 1.1 * peak : 1  // headroom: the peak stays inside the frame
        let columns = Int(plotWidth)
        // Stems get half a sample of room on either side, so the first one is not on the frame.
        let margin = samples.count <= columns ? 0.5 / sampleRate : 0
        let x = Axis(low: -margin, high: duration - margin, label: "time (s)", ticks: linearTicks(-margin, duration - margin))
        let y = Axis(low: -limit, high: limit, label: "amplitude", ticks: linearTicks(-limit, limit))
        var points: [(Double, Double)] = []
        if samples.count <= columns {
            // Few samples (a short FIR): one stem per sample, so every tap shows.
            for (frame, sample) in samples.enumerated() {
                let time = Double(frame) / sampleRate
                points += [(time, 0), (time, Double(sample)), (time, 0)]
            }
        } else {
            for column in 0..<columns {
                let slice = samples[column * samples.count / columns..<(column + 1) * samples.count / columns]
                let time = Double(slice.startIndex) / sampleRate
                points += [(time, Double(slice.max()!)), (time, Double(slice.min()!))]
            }
        }
        return panel(
            kind: "waveform", channel: channel, title: "Channel \(channel): waveform", origin: origin, x: x, y: y,
            body: polyline(points, className: "trace", x: x, y: y))
    }

    /// 1/6-octave smoothed response from 20 Hz (or the first bin) to Nyquist, log frequency.
    static func magnitude(_ response: MagnitudeResponse, channel: Int, origin: (Double, Double)) -> String {
        let nyquist = response.sampleRate / 2
        let low = min(20, nyquist / 100)
        let frequencies = (0..<magnitudePointCount).map {
            low * pow(nyquist / low, Double($0) / Double(magnitudePointCount - 1))
        }
        let levels = frequencies.map { response.smoothedDB(at: $0, octaveFraction: 1.0 / 6) }
        let loudest = levels.filter(\.isFinite).max() ?? 0
        let top = 10 * ((loudest + 1) / 10).rounded(.up)
        let x = Axis(
            low: low, high: nyquist, logarithmic: true, label: "frequency (Hz)",
            ticks: [20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000]
                .filter { $0 >= low && $0 <= nyquist }
                .map { ($0, $0 >= 1000 ? "\(Int($0 / 1000))k" : "\(Int($0))") })
        let y = Axis(
            low: top - 70, high: top, label: "level (dB)",
            ticks: stride(from: top - 70, through: top, by: 10).map { ($0, String(cFormat: "%.0f", $0)) })
        return panel(
            kind: "magnitude", channel: channel, title: "Channel \(channel): magnitude response",
            origin: origin, x: x, y: y, body: polyline(Array(zip(frequencies, levels)), className: "trace", x: x, y: y))
    }

    /// The energy decay curve down to `decayFloorDB`, and the RT60 fit line over it.
    static func decay(
        _ channel: ChannelDecayAnalysis, channel index: Int, sampleRate: Double,
        origin: (Double, Double)
    ) -> String {
        let curve = channel.energyDecayDB
        let duration = Double(curve.count) / sampleRate
        let x = Axis(low: 0, high: duration, label: "time (s)", ticks: linearTicks(0, duration))
        let y = Axis(
            low: decayFloorDB, high: 0, label: "energy (dB)",
            ticks: stride(from: decayFloorDB, through: 0, by: 20).map { ($0, String(cFormat: "%.0f", $0)) })
        var points: [(Double, Double)] = []
        let step = max(1, curve.count / Int(plotWidth))
        for frame in stride(from: 0, to: curve.count, by: step) {
            points.append((Double(frame) / sampleRate, Double(curve[frame])))
            if Double(curve[frame]) < decayFloorDB { break }  // the rest is below the plot
        }
        if let last = curve.last, Double(last) >= decayFloorDB {
            // The curve stops above the floor (a short IR): draw its level to the end, then the
            // drop to no energy at all.
            points += [(duration, Double(last)), (duration, -.infinity)]
        }
        var body = polyline(points, className: "trace", x: x, y: y)
        if let reverberation = channel.reverberation {
            let (fit, name) = reverberation
            // The line from 0 dB (or time 0) down to the floor (or the end of the time axis).
            let start = max(0, -fit.interceptDB / fit.slopeDBPerSecond)
            let end = min(duration, (decayFloorDB - fit.interceptDB) / fit.slopeDBPerSecond)
            body += polyline(
                [(start, fit.levelDB(atSeconds: start)), (end, fit.levelDB(atSeconds: end))],
                className: "fit", x: x, y: y)
            body +=
                #"<text class="legend" x="\#(plotWidth - 6)" y="16" text-anchor="end">"#
                + String(cFormat: "RT60 %.3f s", fit.decayTimeSeconds) + " (from \(name))</text>\n"
        }
        return panel(
            kind: "decay", channel: index, title: "Channel \(index): energy decay", origin: origin,
            x: x, y: y, body: body)
    }

    // MARK: Axes and panels

    struct Axis {
        var low: Double
        var high: Double
        var logarithmic = false
        var label: String
        var ticks: [(value: Double, text: String)]

        /// 0...1 across the axis, clamped: out-of-range data is drawn at the edge, not outside the plot.
        func fraction(_ value: Double) -> Double {
            if value.isInfinite { return value > 0 ? 1 : 0 }  // −∞ dB (an exact zero) sits on the bottom edge
            guard high > low, !value.isNaN else { return 0 }
            let position = logarithmic ? log(value / low) / log(high / low) : (value - low) / (high - low)
            return position.isFinite ? min(1, max(0, position)) : 0
        }
    }

    static func panel(
        kind: String, channel: Int, title: String, origin: (Double, Double), x: Axis, y: Axis,
        body: String
    ) -> String {
        var svg =
            #"<g class="plot \#(kind)" id="channel-\#(channel)-\#(kind)" transform="translate(\#(origin.0 + plotLeft),\#(origin.1 + plotTop))">"#
            + "\n"
        svg += #"<text class="panel-title" x="0" y="-10">\#(escaped(title))</text>"# + "\n"
        svg += #"<g class="axes">"# + "\n"
        for tick in x.ticks {
            let position = format(x.fraction(tick.value) * plotWidth)
            svg += #"<line class="grid" x1="\#(position)" y1="0" x2="\#(position)" y2="\#(plotHeight)"/>"#
            svg += #"<text x="\#(position)" y="\#(plotHeight + 14)" text-anchor="middle">\#(escaped(tick.text))</text>"# + "\n"
        }
        for tick in y.ticks {
            let position = format((1 - y.fraction(tick.value)) * plotHeight)
            svg += #"<line class="grid" x1="0" y1="\#(position)" x2="\#(plotWidth)" y2="\#(position)"/>"#
            svg += #"<text x="-6" y="\#(position)" dy="4" text-anchor="end">\#(escaped(tick.text))</text>"# + "\n"
        }
        svg += #"<rect class="frame" x="0" y="0" width="\#(plotWidth)" height="\#(plotHeight)"/>"# + "\n"
        svg += #"<text x="\#(plotWidth / 2)" y="\#(plotHeight + 32)" text-anchor="middle">\#(escaped(x.label))</text>"# + "\n"
        svg += #"<text transform="translate(-48,\#(plotHeight / 2)) rotate(-90)" text-anchor="middle">\#(escaped(y.label))</text>"# + "\n"
        svg += "</g>\n" + body + "</g>\n"
        return svg
    }

    static func polyline(_ points: [(Double, Double)], className: String, x: Axis, y: Axis) -> String {
        let coordinates = points.map { point in
            "\(format(x.fraction(point.0) * plotWidth)),\(format((1 - y.fraction(point.1)) * plotHeight))"
        }
        return #"<polyline class="\#(className)" points="\#(coordinates.joined(separator: " "))"/>"# + "\n"
    }

    /// About five round ticks (1, 2 or 5 times a power of ten) from `low` to `high`.
    static func linearTicks(_ low: Double, _ high: Double) -> [(value: Double, text: String)] {
        guard high > low else { return [(low, String(cFormat: "%g", low))] }
        let rough = (high - low) / 5
        let power = pow(10, floor(log10(rough)))
        let step = [1.0, 2, 5, 10].map { $0 * power }.first { $0 >= rough } ?? 10 * power
        var ticks: [(Double, String)] = []
        var value = (low / step).rounded(.up) * step
        while value <= high + step * 1e-9 {
            // Snap -0 and rounding dust so labels read "0", "0.5", not "-0", "0.49999".
            let clean = abs(value) < step * 1e-9 ? 0 : (value / step).rounded() * step
            ticks.append((clean, String(cFormat: "%g", clean)))
            value += step
        }
        return ticks
    }

    static func format(_ value: Double) -> String { String(cFormat: "%.1f", value) }

    static func escaped(_ text: String) -> String {
        text.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;")
            .replacing("\"", with: "&quot;")
    }
}
