// trace_parse_floor FILE
//
// The speed floor for the trace analyser: a streaming RapidJSON SAX parse (kParseDefaultFlags)
// of a Chrome trace through a handler that only counts what it sees, nothing else. A plain file
// is read with a 64 KiB-buffer FileReadStream; a gzip file (by its magic bytes) is decompressed
// with zlib gzread into a 64 KiB buffer that feeds the same parser. Prints the counts as one JSON
// line; exit status 1 on a parse or I/O error, 2 on bad usage.
#include <rapidjson/error/en.h>
#include <rapidjson/filereadstream.h>
#include <rapidjson/reader.h>
#include <zlib.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

constexpr std::size_t kBufferSize = 64 * 1024;

struct CountingHandler : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, CountingHandler> {
    std::uint64_t values = 0;   // every scalar value (null, bool, number, string)
    std::uint64_t keys = 0;
    std::uint64_t objects = 0;
    std::uint64_t arrays = 0;

    bool Default() { ++values; return true; }  // all scalar callbacks of the base land here
    bool String(const char*, rapidjson::SizeType, bool) { ++values; return true; }
    bool Key(const char*, rapidjson::SizeType, bool) { ++keys; return true; }
    bool StartObject() { ++objects; return true; }
    bool EndObject(rapidjson::SizeType) { return true; }
    bool StartArray() { ++arrays; return true; }
    bool EndArray(rapidjson::SizeType) { return true; }
};

// A RapidJSON input stream over gzread, shaped like rapidjson::FileReadStream.
class GzReadStream {
public:
    typedef char Ch;
    GzReadStream(gzFile file, char* buffer, std::size_t size)
        : file_(file), buffer_(buffer), size_(size) { Read(); }
    Ch Peek() const { return *current_; }
    Ch Take() { Ch c = *current_; Read(); return c; }
    std::size_t Tell() const { return count_ + static_cast<std::size_t>(current_ - buffer_); }
    const Ch* Peek4() const { return (current_ + 4 <= end_) ? current_ : nullptr; }
    // Not used by a reader.
    void Put(Ch) { RAPIDJSON_ASSERT(false); }
    void Flush() { RAPIDJSON_ASSERT(false); }
    Ch* PutBegin() { RAPIDJSON_ASSERT(false); return nullptr; }
    std::size_t PutEnd(Ch*) { RAPIDJSON_ASSERT(false); return 0; }
    const bool* failed() const { return &failed_; }

private:
    void Read() {
        if (current_ < end_) { ++current_; return; }
        if (eof_) return;
        count_ += read_;
        int n = gzread(file_, buffer_, static_cast<unsigned>(size_));
        if (n < 0) failed_ = true;
        read_ = n > 0 ? static_cast<std::size_t>(n) : 0;
        current_ = buffer_;
        end_ = buffer_ + read_ - 1;
        if (read_ == 0) {  // end of input: a single NUL, as FileReadStream does
            buffer_[0] = '\0';
            end_ = buffer_;
            eof_ = true;
        }
    }
    gzFile file_;
    char* buffer_;
    std::size_t size_;
    char* current_ = nullptr;
    char* end_ = nullptr;
    std::size_t read_ = 0;
    std::size_t count_ = 0;
    bool eof_ = false;
    bool failed_ = false;
};

bool IsGzip(std::FILE* f) {
    unsigned char magic[2] = {0, 0};
    std::size_t n = std::fread(magic, 1, 2, f);
    std::rewind(f);
    return n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

template <typename Stream>
int Parse(Stream& stream, const char* path, const bool* io_failed) {
    CountingHandler handler;
    rapidjson::Reader reader;
    rapidjson::ParseResult ok = reader.Parse<rapidjson::kParseDefaultFlags>(stream, handler);
    if (io_failed != nullptr && *io_failed) {
        std::fprintf(stderr, "trace_parse_floor: %s: gzip read error\n", path);
        return 1;
    }
    if (!ok) {
        std::fprintf(stderr, "trace_parse_floor: %s: parse error at offset %zu: %s\n", path,
                     ok.Offset(), rapidjson::GetParseError_En(ok.Code()));
        return 1;
    }
    std::printf("{\"values\": %llu, \"keys\": %llu, \"objects\": %llu, \"arrays\": %llu, "
                "\"bytes\": %zu}\n",
                static_cast<unsigned long long>(handler.values),
                static_cast<unsigned long long>(handler.keys),
                static_cast<unsigned long long>(handler.objects),
                static_cast<unsigned long long>(handler.arrays), stream.Tell());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: trace_parse_floor FILE   (.json or gzip-compressed)\n");
        return 2;
    }
    const char* path = argv[1];
    std::FILE* f = std::fopen(path, "rb");
    if (f == nullptr) {
        std::fprintf(stderr, "trace_parse_floor: cannot open %s: %s\n", path, std::strerror(errno));
        return 1;
    }
    std::vector<char> buffer(kBufferSize);
    if (!IsGzip(f)) {
        rapidjson::FileReadStream stream(f, buffer.data(), buffer.size());
        int rc = Parse(stream, path, nullptr);
        std::fclose(f);
        return rc;
    }
    std::fclose(f);
    gzFile gz = gzopen(path, "rb");
    if (gz == nullptr) {
        std::fprintf(stderr, "trace_parse_floor: cannot open %s\n", path);
        return 1;
    }
    gzbuffer(gz, kBufferSize);
    GzReadStream stream(gz, buffer.data(), buffer.size());
    int rc = Parse(stream, path, stream.failed());
    gzclose(gz);
    return rc;
}
