#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Serves regular files from one folder, and never a file outside it.
///
/// Refused: `.` and `..` segments (also when percent-encoded, since segments arrive decoded), segments holding `/`
/// or NUL, hidden files, and any path whose real path (symlinks resolved) leaves the folder.
public struct StaticFiles: Sendable {
    /// The folder's real path, without a trailing slash.
    public let root: String

    /// Nil when the folder does not exist.
    public init?(root: String) {
        guard let resolved = realpath(root, nil) else { return nil }
        defer { free(resolved) }
        self.root = String(cString: resolved)
    }

    /// A file that is there but cannot be opened now: the process or the system has no descriptor (or memory) left.
    public struct Unavailable: Error {
        /// The system's words.
        public let reason: String
    }

    /// The response for a GET of these decoded path segments, or nil when there is no such file here; throws
    /// `Unavailable` when it cannot be opened for want of descriptors or memory (not a missing file: try again).
    ///
    /// `path` is the request's path as sent: a folder's `index.html` is served at the folder's path with a slash at
    /// its end (`/docs/`, so that the page's relative links resolve inside the folder), and a request without it is
    /// redirected there (301, keeping `query` as sent); a file's path with a slash at its end names nothing.
    public func response(
        for segments: [String], path: String, query: String? = nil, ifNoneMatch: String?
    ) throws(Unavailable) -> HTTPResponse? {
        guard let (resolved, isFolder) = resolvedPath(of: segments) else { return nil }
        guard isFolder == path.hasSuffix("/") else {
            // One slash first: `//docs/` would be another host's `/docs/` to a browser.
            let location = "/" + path.drop(while: { $0 == "/" }) + "/" + (query.map { "?" + $0 } ?? "")
            return isFolder ? HTTPResponse(status: 301, headers: [("Location", location)]) : nil
        }
        var info = stat()
        // Non-blocking: opening a FIFO for reading would wait for a writer (it is then refused as not regular).
        let descriptor = open(resolved, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            guard [EMFILE, ENFILE, ENOMEM].contains(errno) else { return nil }
            throw Unavailable(reason: String(cString: strerror(errno)))
        }
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            return nil
        }
        let etag =
            "\"\(String(UInt64(info.st_ino), radix: 16))-\(String(Int64(info.st_size), radix: 16))-"
            + "\(String(Int64(info.st_mtim.tv_sec), radix: 16))\(String(Int64(info.st_mtim.tv_nsec), radix: 16))\""
        var headers: [(name: String, value: String)] = [
            ("Content-Type", Self.contentType(forPath: resolved)),
            ("ETag", etag),
            ("Cache-Control", "no-cache"),
        ]
        if let ifNoneMatch, ifNoneMatch.split(separator: ",").contains(where: { matches($0, etag) }) {
            close(descriptor)
            headers.removeFirst()
            return HTTPResponse(status: 304, headers: headers)
        }
        return HTTPResponse(
            status: 200, headers: headers, body: .file(descriptor: descriptor, size: Int64(info.st_size)))
    }

    /// Whether these decoded path segments name a file served here (a write to it is then 405, not 404).
    public func hasFile(at segments: [String]) -> Bool {
        var info = stat()
        guard let (resolved, _) = resolvedPath(of: segments) else { return false }
        return stat(resolved, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    /// The real path of the file the segments name (a folder's `index.html`), when it is inside the folder, and
    /// whether they name a folder.
    private func resolvedPath(of segments: [String]) -> (path: String, isFolder: Bool)? {
        for segment in segments {
            if segment.hasPrefix(".") || segment.contains("/") || segment.utf8.contains(0) { return nil }
        }
        var path = segments.isEmpty ? root : root + "/" + segments.joined(separator: "/")
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        let isFolder = (info.st_mode & S_IFMT) == S_IFDIR
        if isFolder {
            path += "/index.html"
        }
        guard let resolvedPointer = realpath(path, nil) else { return nil }
        let resolved = String(cString: resolvedPointer)
        free(resolvedPointer)
        return resolved.hasPrefix(root + "/") ? (resolved, isFolder) : nil
    }

    private func matches(_ candidate: Substring, _ etag: String) -> Bool {
        var tag = candidate.trimmingCharacters(in: " \t")
        if tag.hasPrefix("W/") { tag.removeFirst(2) }
        return tag == "*" || tag == etag
    }

    /// The media type for a file name's extension.
    public static func contentType(forPath path: String) -> String {
        let name = path.split(separator: "/").last ?? ""
        let ext = name.split(separator: ".").count > 1 ? String(name.split(separator: ".").last!).lowercased() : ""
        switch ext {
        case "html", "htm": return "text/html; charset=utf-8"
        case "css": return "text/css; charset=utf-8"
        case "js", "mjs": return "text/javascript; charset=utf-8"
        case "json": return "application/json"
        case "webmanifest": return "application/manifest+json"
        case "svg": return "image/svg+xml"
        case "png": return "image/png"
        case "jpg", "jpeg": return "image/jpeg"
        case "gif": return "image/gif"
        case "ico": return "image/x-icon"
        case "webp": return "image/webp"
        case "woff2": return "font/woff2"
        case "txt", "md": return "text/plain; charset=utf-8"
        case "xml", "plist": return "application/xml"
        case "wasm": return "application/wasm"
        default: return "application/octet-stream"
        }
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var s = self
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}
