import CSndFile
import Glibc

/// Reading and writing audio files with libsndfile.
///
/// `read` takes anything libsndfile reads (WAV, FLAC, AIFF, OGG, ...); integer samples come back
/// scaled to ±1.0 and float samples as stored (NaN and Inf included: callers check). `write`
/// writes WAV: 32-bit float by default, or 16/24-bit PCM (clipped to ±1.0).
public enum AudioFile {
    public enum Format: Sendable, Equatable {
        case float32Wav
        case pcm16Wav
        case pcm24Wav
    }

    /// What the file's header says, known before any sample is read.
    public struct Info: Sendable, Equatable {
        public var sampleRate: Double
        public var channelCount: Int
        public var frameCount: Int

        public init(sampleRate: Double, channelCount: Int, frameCount: Int) {
            self.sampleRate = sampleRate
            self.channelCount = channelCount
            self.frameCount = frameCount
        }
    }

    /// Reads every frame of every channel.
    public static func read(path: String) throws(AudioFileError) -> (sampleRate: Double, channels: [[Float]]) {
        let file = try SoundFileReader(path: path)
        let channels = try file.readChannels(frames: 0..<file.info.frameCount)
        return (file.info.sampleRate, channels)
    }

    /// Reads only the header.
    public static func info(path: String) throws(AudioFileError) -> Info {
        try SoundFileReader(path: path).info
    }

    /// Writes `channels` (all of equal length, at least one) as a WAV file, replacing `path`.
    public static func write(
        path: String, sampleRate: Double, channels: [[Float]],
        format: Format = .float32Wav
    ) throws(AudioFileError) {
        guard !channels.isEmpty else {
            throw .cannotWrite(path: path, reason: "no channels given")
        }
        let frameCount = channels[0].count
        guard channels.allSatisfy({ $0.count == frameCount }) else {
            throw .cannotWrite(path: path, reason: "channels differ in length: \(channels.map(\.count))")
        }
        let writer = try SoundFileWriter(path: path, sampleRate: sampleRate, channelCount: channels.count, format: format)
        let channelCount = channels.count
        let chunkFrames = 16384
        var interleaved = [Float](repeating: 0, count: chunkFrames * channelCount)
        var written = 0
        while written < frameCount {
            let count = min(chunkFrames, frameCount - written)
            for frame in 0..<count {
                for channel in 0..<channelCount {
                    interleaved[frame * channelCount + channel] = channels[channel][written + frame]
                }
            }
            // Swift 6.0's withUnsafeBufferPointer rethrows `any Error`: the typed error comes out as a value.
            let failure = interleaved.withUnsafeBufferPointer { buffer -> AudioFileError? in
                do throws(AudioFileError) { try writer.write(interleaved: buffer, frames: count) } catch { return error }
                return nil
            }
            if let failure { throw failure }
            written += count
        }
        try writer.close()
    }
}

/// A WAV file written block by block (memory independent of its length). `close()` finishes it;
/// a writer dropped without it closes the file as far as it got.
public final class SoundFileWriter {
    public let path: String
    public let channelCount: Int
    private var handle: OpaquePointer?
    private var written = 0

    public init(path: String, sampleRate: Double, channelCount: Int, format: AudioFile.Format = .float32Wav) throws(AudioFileError) {
        guard channelCount > 0 else { throw .cannotWrite(path: path, reason: "no channels given") }
        guard sampleRate.isFinite, sampleRate >= 1, sampleRate <= Double(Int32.max),
            sampleRate == sampleRate.rounded()
        else {
            throw .cannotWrite(path: path, reason: "sample rate \(sampleRate) is not a positive whole number of Hz")
        }
        let encoding: Int32
        switch format {
        case .float32Wav: encoding = Int32(SF_FORMAT_FLOAT)
        case .pcm16Wav: encoding = Int32(SF_FORMAT_PCM_16)
        case .pcm24Wav: encoding = Int32(SF_FORMAT_PCM_24)
        }
        var sfInfo = SF_INFO()
        sfInfo.samplerate = Int32(sampleRate)
        sfInfo.channels = Int32(channelCount)
        sfInfo.format = Int32(SF_FORMAT_WAV) | encoding
        guard let handle = sf_open(path, Int32(SFM_WRITE), &sfInfo) else {
            throw .cannotWrite(path: path, reason: String(cString: sf_strerror(nil)))
        }
        // Out-of-range floats clip instead of wrapping around in integer formats.
        sf_command(handle, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
        self.path = path
        self.channelCount = channelCount
        self.handle = handle
    }

    deinit { if let handle { sf_close(handle) } }

    /// Appends `frames` frames of `channelCount` interleaved samples from `interleaved`.
    public func write(interleaved: UnsafeBufferPointer<Float>, frames: Int) throws(AudioFileError) {
        guard let handle else { throw .cannotWrite(path: path, reason: "already closed") }
        precondition(frames * channelCount <= interleaved.count, "fewer samples than frames")
        let done = Int(sf_writef_float(handle, interleaved.baseAddress, sf_count_t(frames)))
        guard done == frames else {
            throw .cannotWrite(
                path: path,
                reason: "wrote \(written + max(done, 0)) frames of \(written + frames): "
                    + String(cString: sf_strerror(handle)))
        }
        written += frames
    }

    /// Finishes the file (its header's sizes).
    public func close() throws(AudioFileError) {
        guard let handle else { return }
        self.handle = nil
        let result = sf_close(handle)
        if result != 0 { throw .cannotWrite(path: path, reason: String(cString: sf_error_number(result))) }
    }
}

/// Why an audio file could not be read or written. Every message names the file.
public enum AudioFileError: Error, Equatable, CustomStringConvertible {
    case notFound(path: String)
    /// The file exists but cannot be opened or read (permissions, a directory, ...).
    case unreadable(path: String, reason: String)
    /// A file of 0 bytes.
    case empty(path: String)
    /// libsndfile does not recognise the contents; `reason` is its message.
    case notAudio(path: String, reason: String)
    /// The header promises more audio data than the file holds.
    case truncated(path: String, detail: String)
    case cannotWrite(path: String, reason: String)

    public var path: String {
        switch self {
        case .notFound(let path), .unreadable(let path, _), .empty(let path), .notAudio(let path, _),
            .truncated(let path, _), .cannotWrite(let path, _):
            return path
        }
    }

    public var description: String {
        switch self {
        case .notFound(let path): return "audio file '\(path)' does not exist"
        case .unreadable(let path, let reason): return "cannot read audio file '\(path)': \(reason)"
        case .empty(let path): return "audio file '\(path)' is empty (0 bytes)"
        case .notAudio(let path, let reason): return "'\(path)' is not an audio file libsndfile can read: \(reason)"
        case .truncated(let path, let detail): return "audio file '\(path)' is truncated: \(detail)"
        case .cannotWrite(let path, let reason): return "cannot write audio file '\(path)': \(reason)"
        }
    }
}

/// An audio file open for reading. The C calls to libsndfile for reading live here.
///
/// The file is opened with `open(2)` first, so that a missing file, a permission problem or a
/// directory are told apart from contents libsndfile does not understand; libsndfile then reads
/// from that descriptor.
public final class SoundFileReader {
    public let path: String
    public let info: AudioFile.Info
    private let descriptor: Int32
    private let handle: OpaquePointer

    public init(path: String) throws(AudioFileError) {
        self.path = path
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { throw .notFound(path: path) }
            throw .unreadable(path: path, reason: String(cString: strerror(code)))
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw .unreadable(path: path, reason: reason)
        }
        let fileType = status.st_mode & S_IFMT
        if fileType == S_IFDIR {
            close(descriptor)
            throw .unreadable(path: path, reason: "it is a directory")
        }
        if fileType == S_IFREG {
            if status.st_size == 0 {
                close(descriptor)
                throw .empty(path: path)
            }
            if let shortfall = Self.wavDataShortfall(descriptor: descriptor, fileSize: Int(status.st_size)) {
                close(descriptor)
                throw .truncated(path: path, detail: shortfall)
            }
        }

        var sfInfo = SF_INFO()
        // SF_FALSE: we close the descriptor ourselves, on every path.
        guard let handle = sf_open_fd(descriptor, Int32(SFM_READ), &sfInfo, Int32(SF_FALSE)) else {
            let reason = String(cString: sf_strerror(nil))
            close(descriptor)
            throw .notAudio(path: path, reason: reason)
        }
        self.descriptor = descriptor
        self.handle = handle
        self.info = AudioFile.Info(
            sampleRate: Double(sfInfo.samplerate), channelCount: Int(sfInfo.channels),
            frameCount: Int(sfInfo.frames))
    }

    deinit {
        sf_close(handle)
        close(descriptor)
    }

    /// Reads `frames` (clamped to the file) of one channel or of all channels (`channel == nil`).
    func readChannels(frames: Range<Int>, channel: Int? = nil) throws(AudioFileError) -> [[Float]] {
        let channelCount = info.channelCount
        let start = max(0, min(frames.lowerBound, info.frameCount))
        let frameCount = max(0, min(frames.upperBound, info.frameCount) - start)
        let selected = channel.map { [$0] } ?? Array(0..<channelCount)
        var channels = [[Float]](repeating: [Float](repeating: 0, count: frameCount), count: selected.count)
        guard frameCount > 0 else { return channels }
        if start > 0, sf_seek(handle, sf_count_t(start), Int32(SF_SEEK_SET)) < 0 {
            throw .truncated(path: path, detail: "cannot seek to frame \(start): " + String(cString: sf_strerror(handle)))
        }

        let chunkFrames = 16384
        var interleaved = [Float](repeating: 0, count: chunkFrames * channelCount)
        var done = 0
        while done < frameCount {
            let wanted = min(chunkFrames, frameCount - done)
            // SAFETY: the buffer holds chunkFrames * channelCount floats; sndfile writes at most
            // `wanted` <= chunkFrames frames of channelCount samples.
            let got = Int(
                interleaved.withUnsafeMutableBufferPointer {
                    sf_readf_float(handle, $0.baseAddress, sf_count_t(wanted))
                })
            for (index, source) in selected.enumerated() {
                for frame in 0..<max(got, 0) {
                    channels[index][done + frame] = interleaved[frame * channelCount + source]
                }
            }
            if got < wanted {
                throw .truncated(
                    path: path,
                    detail: "the header promises \(info.frameCount) frames but reading stopped after \(start + done + max(got, 0)): "
                        + String(cString: sf_strerror(handle)))
            }
            done += got
        }
        return channels
    }

    /// Reads the next `frames` frames (fewer at the end of the file) of all channels, interleaved,
    /// into `interleaved`, from where the last read stopped; returns how many it read.
    public func readInterleaved(into interleaved: UnsafeMutableBufferPointer<Float>, frames: Int) throws(AudioFileError) -> Int {
        precondition(frames * info.channelCount <= interleaved.count, "a buffer smaller than the frames asked for")
        let got = Int(sf_readf_float(handle, interleaved.baseAddress, sf_count_t(frames)))
        guard got >= 0 else { throw .truncated(path: path, detail: String(cString: sf_strerror(handle))) }
        return got
    }

    /// For a RIFF/WAVE file: a description of the shortfall when the `data` chunk declares more
    /// bytes than the file holds. libsndfile silently reads such a cut file as a shorter one.
    /// Sizes 0 and 0xFFFFFFFF (written by streaming writers that never went back to the header)
    /// are not checked. Other formats: nil (their decoders report short reads).
    private static func wavDataShortfall(descriptor: Int32, fileSize: Int) -> String? {
        func bytes(at offset: Int, count: Int) -> [UInt8]? {
            var buffer = [UInt8](repeating: 0, count: count)
            // SAFETY: pread writes at most `count` bytes into a buffer of `count` bytes.
            let got = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) }
            return got == count ? buffer : nil
        }
        func littleEndian32(_ bytes: [UInt8], at index: Int) -> Int {
            (0..<4).reduce(0) { $0 | Int(bytes[index + $1]) << (8 * $1) }
        }
        guard let header = bytes(at: 0, count: 12),
            header[0..<4].elementsEqual("RIFF".utf8), header[8..<12].elementsEqual("WAVE".utf8)
        else { return nil }
        var offset = 12
        while offset + 8 <= fileSize, let chunk = bytes(at: offset, count: 8) {
            let size = littleEndian32(chunk, at: 4)
            if chunk[0..<4].elementsEqual("data".utf8) {
                let available = fileSize - (offset + 8)
                guard size != 0, size != 0xFFFF_FFFF, size > available else { return nil }
                return "its header declares \(size) bytes of audio data but the file holds \(available)"
            }
            offset += 8 + size + (size & 1)
        }
        return nil
    }
}
