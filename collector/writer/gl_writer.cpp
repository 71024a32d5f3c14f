// gl_writer.cpp — the Parquet writer shim behind the C ABI of grainlab_event.h.
//
// grainlab-convert links this library to turn a spool into the trace, after
// the run and in its own process, so applications never load C++/Arrow. (The
// native tests still dlopen() it, as the collector once did.) Each
// gl_writer_write call turns one thread's buffer (array of gl_event_t) into
// one Parquet row group with the columns of docs/trace-format.md;
// gl_writer_write_columns does the same from columns (gl_event_columns: the
// converter decodes compact blocks straight into them).
//
// Design notes:
// - No exception may cross the C ABI: every entry point catches everything and
//   reports through (err, errlen) plus a return code.
// - gl_writer_write transposes rows (gl_event_t) into scratch vectors owned
//   by the writer and reused across calls; Arrow arrays wrap those vectors,
//   or gl_writer_write_columns' arrays, without copying.
// - Buffers come from Arrow's jemalloc pool (writer_pool): glibc malloc's
//   arenas fragmented until the resident memory grew with the trace. (The
//   jemalloc pool once failed to initialise when first used on a libomp
//   worker thread, where the collector used to write; the converter is a
//   process of its own and falls back to the system pool if it must.)
// - Encodings, zstd levels and statistics are chosen per column (kColumns,
//   with the measured figures) for a small file written fast: the clock, ids,
//   counters and event-specific values use DELTA_BINARY_PACKED, `other`,
//   `event` and `kind` BYTE_STREAM_SPLIT, `codeptr` a dictionary, the
//   near-constant `thread`, `cpu` and `flags` PLAIN. Everything is
//   zstd-compressed. On fib(30) (2 threads, 10.8 M events) this made the
//   converter's CPU time 1.25 -> 1.08 s (best of 7) for 2.04 -> 2.08
//   bytes/event, and loop_dynamic's trace 3.88 -> 0.96 bytes/event.
// - The fixed columns (names, types, order, where each value comes from) are
//   the GL_COLUMN lines of grainlab/trace_columns.def, the one definition the
//   Python side reads too: each use below expands them.
#include "grainlab_event.h"
#include "grainlab_spool.h"

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <arrow/util/key_value_metadata.h>
#include <parquet/arrow/writer.h>
#include <parquet/properties.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace {

// How each fixed column is written: encoding, zstd level, statistics. The
// figures are per column on a fib(30) trace (10.8 M events, 2 threads; time:
// Arrow writing that column alone, 165 row groups of 64 Ki rows) and on a
// loop_dynamic trace (3 M iterations, chunks of 1), which has varying values
// where fib has constants. Each compressed page costs one zstd context
// (Arrow 26 creates one per page; ZSTD_createCCtx runs `cpuid`, ~7 us a
// time on a VM), so fewer pages per row group also count.
enum class Enc { kDict, kPlain, kDelta, kByteSplit };
struct ColumnChoice {
  const char *name;
  Enc enc;
  int zstd_level;
  // Min/max in the footer: kept where a reader could prune by them (time,
  // thread, event kinds); off for ids, addresses and event-specific values,
  // whose min/max say nothing (GetMinMax on the 64-bit columns was ~4% of the
  // converter's time). grainlab.analysis.trace_key still sees any content
  // change: the footer holds every column chunk's size and tsc's range.
  bool statistics;
};
// zstd levels: 3 where a column is small once encoded (tsc, task: its
// deltas), 1 where zstd reads 4-8 bytes an event (event, kind, other, and
// value/count, which are nearly all zeros on task programs): level 3's
// doubleFast matcher on those was ~8% of the converter's CPU for ~7% of
// the file (fib 32: 1.67 -> 1.54 s, 1.55 -> 1.68 bytes/event; 10^8
// grains must be ready within 3x the run, issue 31).
constexpr ColumnChoice kColumns[] = {
    // Event codes and OMPT kinds: few values, but dictionary + RLE cost
    // ~80 ms each (DictEncoder Put/WriteIndices) for 0.03 bytes/event;
    // BYTE_STREAM_SPLIT puts the (zero) high bytes in streams of their own:
    // 0.06 bytes/event for ~42 ms.
    {"event", Enc::kByteSplit, 1, true},
    // Constant per row group (thread) or nearly (cpu, flags): PLAIN + zstd
    // level 1 is as small as dictionary + RLE (0.004-0.006 bytes/event) in
    // half the time (~26 against ~50 ms) and one page instead of two.
    {"thread", Enc::kPlain, 1, true},
    {"cpu", Enc::kPlain, 1, true},
    // Clock and task ids grow within a thread: DELTA_BINARY_PACKED.
    // zstd level 3 rather than 1: tsc 1.04 against 1.12 bytes/event for
    // ~3% more converter time.
    {"tsc", Enc::kDelta, 3, true},
    {"task", Enc::kDelta, 3, false},
    // `other` jumps between parent, prior-task and region ids, so its deltas
    // are large; splitting its bytes into streams lets zstd see that the high
    // bytes (the `(thread + 1) << 40` id prefix) barely change: 0.66
    // bytes/event against 1.50 with DELTA_BINARY_PACKED and 1.20 with PLAIN.
    {"other", Enc::kByteSplit, 1, false},
    // A few return addresses per program: the dictionary wins by far (0.03
    // bytes/event against 0.28-0.50 for the others).
    {"codeptr", Enc::kDict, 3, false},
    // Zero in most events, but a loop's first iteration or a chunk's size in
    // CHUNK rows: DELTA_BINARY_PACKED makes loop_dynamic's trace 0.96
    // bytes/event in all against 3.88 with dictionaries (which overflow to
    // PLAIN there) and 2.23 with PLAIN; on fib it costs ~4% more converter
    // time than PLAIN for the same size.
    {"value", Enc::kDelta, 1, false},
    {"count", Enc::kDelta, 1, false},
    {"kind", Enc::kByteSplit, 1, true},
    {"flags", Enc::kPlain, 1, true},
};
constexpr bool same_name(const char *a, const char *b) {
  return *a == *b && (*a == '\0' || same_name(a + 1, b + 1));
}
// kColumns follows trace_columns.def line for line.
constexpr const char *kDefColumns[] = {
#define GL_COLUMN(name, type, source) #name,
#include "trace_columns.def"
#undef GL_COLUMN
};
static_assert(std::size(kColumns) == std::size(kDefColumns),
              "kColumns must list every column of trace_columns.def");
constexpr bool columns_match() {
  for (size_t i = 0; i < std::size(kColumns); i++)
    if (!same_name(kColumns[i].name, kDefColumns[i])) return false;
  return true;
}
static_assert(columns_match(), "kColumns must follow trace_columns.def's order");
// A row group is one buffer; never let the Parquet writer split it.
constexpr int64_t kMaxRowGroupLength = int64_t{1} << 40;

// Arrow's jemalloc pool when this Arrow has it, else the system (malloc)
// pool. With malloc, the writer's transient page buffers, freed on Arrow's
// worker threads among long-lived metadata, fragmented glibc's per-thread
// arenas: the converter's resident memory grew with the trace (uts deep,
// 20 M events: 41 -> 66 MB over the run with the old encodings, 44 -> 106 MB
// with the present ones); with jemalloc it stays at 44-51 MB, as fast.
arrow::MemoryPool *writer_pool() {
  arrow::MemoryPool *pool = nullptr;
  if (arrow::jemalloc_memory_pool(&pool).ok() && pool != nullptr) return pool;
  return arrow::system_memory_pool();
}

void set_error(char *err, size_t errlen, const std::string &msg) {
  if (err != nullptr && errlen > 0) std::snprintf(err, errlen, "%s", msg.c_str());
}

std::string counter_column(const char *name) { return std::string("counter:") + name; }

std::shared_ptr<arrow::Schema> make_schema(int ncounters, const char *const *names) {
  arrow::FieldVector fields = {
#define GL_COLUMN(name, type, source) arrow::field(#name, arrow::type(), false),
#include "trace_columns.def"
#undef GL_COLUMN
  };
  for (int c = 0; c < ncounters; c++)
    fields.push_back(arrow::field(counter_column(names[c]), arrow::int64(), true));
  return arrow::schema(std::move(fields));
}

std::shared_ptr<parquet::WriterProperties> make_properties(int ncounters,
                                                           const char *const *names) {
  parquet::WriterProperties::Builder b;
  b.memory_pool(writer_pool())
      ->compression(parquet::Compression::ZSTD)
      ->max_row_group_length(kMaxRowGroupLength)
      // One data page per column of a full buffer (GL_BUFFER_EVENTS_DEFAULT
      // rows, +1 for a flush's FLUSH_END row). Arrow's default cuts a page
      // every 20,000 rows, and each compressed page costs a fresh zstd
      // context (~20 us here: ZSTD_createCCtx runs `cpuid`, a VM exit): 45
      // contexts a row group instead of 12 were 10% of the converter's CPU,
      // and zstd compresses one larger page better. The page is cut as the
      // buffered row group's batch ends, on Arrow's pool threads: a page left
      // open would be compressed when the group closes, serially on the
      // writer thread (a limit of 2^40 rows did that: 10% slower in wall
      // time). fib 32 (28.2M events): 2.03 -> 1.67 s, 1.96 -> 1.55 bytes/event.
      ->max_rows_per_page(GL_BUFFER_EVENTS_DEFAULT + 1);
  auto set = [&b](const std::string &col, Enc enc, int level, bool stats) {
    b.compression_level(col, level);
    if (!stats) b.disable_statistics(col);
    switch (enc) {
      case Enc::kDict: b.enable_dictionary(col); break;
      case Enc::kPlain: b.disable_dictionary(col)->encoding(col, parquet::Encoding::PLAIN); break;
      case Enc::kDelta:
        b.disable_dictionary(col)->encoding(col, parquet::Encoding::DELTA_BINARY_PACKED);
        break;
      case Enc::kByteSplit:
        b.disable_dictionary(col)->encoding(col, parquet::Encoding::BYTE_STREAM_SPLIT);
        break;
    }
  };
  for (const ColumnChoice &c : kColumns) set(c.name, c.enc, c.zstd_level, c.statistics);
  // Counters are cumulative per thread: deltas are small and positive.
  for (int c = 0; c < ncounters; c++) set(counter_column(names[c]), Enc::kDelta, 3, true);
  return b.build();
}

// Wrap n values (a scratch vector, or the caller's column) as an Arrow
// array, without copying.
template <typename T>
std::shared_ptr<arrow::Array> wrap(const std::shared_ptr<arrow::DataType> &type, const T *v,
                                   size_t n, std::shared_ptr<arrow::Buffer> validity = nullptr,
                                   int64_t null_count = 0) {
  auto data = std::make_shared<arrow::Buffer>(reinterpret_cast<const uint8_t *>(v),
                                              static_cast<int64_t>(n * sizeof(T)));
  return arrow::MakeArray(arrow::ArrayData::Make(type, static_cast<int64_t>(n),
                                                 {std::move(validity), std::move(data)},
                                                 null_count));
}

}  // namespace

struct gl_writer {
  std::unique_ptr<parquet::arrow::FileWriter> file;
  std::shared_ptr<arrow::io::FileOutputStream> sink;
  std::string path;
  int ncounters = 0;
  // Set when a write failed part-way through a row group: the Parquet writer
  // cannot continue from there, so later writes are refused with this reason.
  std::string broken;

  // Column scratch, reused across row groups: one vector per fixed column.
#define GL_COLUMN(name, type, source) std::vector<type##_t> name;
#include "trace_columns.def"
#undef GL_COLUMN
  std::vector<std::vector<int64_t>> counters;
  std::vector<std::vector<uint8_t>> validity;  // Arrow bitmaps, LSB first

  void resize(size_t n) {
#define GL_COLUMN(name, type, source) name.resize(n);
#include "trace_columns.def"
#undef GL_COLUMN
    for (auto &v : counters) v.resize(n);
    for (auto &v : validity) v.resize((n + 7) / 8);
  }

  // Rows (gl_writer_write): transposed into the scratch columns.
  arrow::Status write(uint32_t thread_index, const gl_event_t *ev, const int64_t *ctr,
                      size_t n) {
    resize(n);
    const uint16_t th = static_cast<uint16_t>(thread_index);
    // A column's value: the event's field of that name, or the buffer's thread.
#define GL_FROM_EVENT(name) e.name
#define GL_FROM_BUFFER(name) th
    for (size_t i = 0; i < n; i++) {
      const gl_event_t &e = ev[i];
#define GL_COLUMN(name, type, source) name[i] = GL_FROM_##source(name);
#include "trace_columns.def"
#undef GL_COLUMN
    }
#undef GL_FROM_EVENT
#undef GL_FROM_BUFFER
    arrow::ArrayVector cols = {
#define GL_COLUMN(name, type, source) wrap(arrow::type(), name.data(), n),
#include "trace_columns.def"
#undef GL_COLUMN
    };
    return write_group(std::move(cols), ctr, n, static_cast<size_t>(ncounters), 1);
  }

  // Columns (gl_writer_write_columns): wrapped as they are; the thread
  // column, which no event carries, from scratch.
  arrow::Status write_columns(uint32_t thread_index, const gl_event_columns &c, size_t n) {
    const uint16_t th = static_cast<uint16_t>(thread_index);
#define GL_FROM_EVENT(name, type) wrap(arrow::type(), c.name, n)
#define GL_FROM_BUFFER(name, type) (name.assign(n, th), wrap(arrow::type(), name.data(), n))
    arrow::ArrayVector cols = {
#define GL_COLUMN(name, type, source) GL_FROM_##source(name, type),
#include "trace_columns.def"
#undef GL_COLUMN
    };
#undef GL_FROM_EVENT
#undef GL_FROM_BUFFER
    return write_group(std::move(cols), c.counters, n, 1, n);
  }

  // One row group: the fixed columns, then the counters, counter k of row i
  // at ctr[i * row_stride + k * counter_stride], INT64_MIN meaning null.
  arrow::Status write_group(arrow::ArrayVector cols, const int64_t *ctr, size_t n,
                            size_t row_stride, size_t counter_stride) {
    for (auto &v : counters) v.resize(n);
    for (auto &v : validity) v.resize((n + 7) / 8);
    std::vector<int64_t> null_counts(ncounters, 0);
    for (int c = 0; c < ncounters; c++) {
      int64_t *dst = counters[c].data();
      uint8_t *bits = validity[c].data();
      const int64_t *src = ctr + static_cast<size_t>(c) * counter_stride;
      std::memset(bits, 0, validity[c].size());
      int64_t nulls = 0;
      for (size_t i = 0; i < n; i++) {
        int64_t x = src[i * row_stride];
        bool valid = x != INT64_MIN;
        dst[i] = valid ? x : 0;
        bits[i >> 3] |= static_cast<uint8_t>(valid) << (i & 7);
        nulls += !valid;
      }
      null_counts[c] = nulls;
    }

    // One buffered row group per call, all columns in one record batch: the
    // writer then encodes and compresses the columns in parallel on Arrow's
    // CPU pool (use_threads), and flushes the group at the next call/Close.
    for (int c = 0; c < ncounters; c++) {
      std::shared_ptr<arrow::Buffer> bitmap;
      if (null_counts[c] > 0)
        bitmap = std::make_shared<arrow::Buffer>(validity[c].data(),
                                                 static_cast<int64_t>(validity[c].size()));
      cols.push_back(
          wrap(arrow::int64(), counters[c].data(), n, std::move(bitmap), null_counts[c]));
    }
    ARROW_RETURN_NOT_OK(file->NewBufferedRowGroup());
    auto batch = arrow::RecordBatch::Make(file->schema(), static_cast<int64_t>(n), cols);
    ARROW_RETURN_NOT_OK(file->WriteRecordBatch(*batch));
    return arrow::Status::OK();
  }
};

extern "C" {

__attribute__((visibility("default"))) gl_writer *gl_writer_open(
    const char *path, int ncounters, const char *const *counter_names, char *err,
    size_t errlen) {
  try {
    if (path == nullptr || *path == '\0') {
      set_error(err, errlen, "gl_writer_open: empty output path");
      return nullptr;
    }
    if (ncounters < 0 || (ncounters > 0 && counter_names == nullptr)) {
      set_error(err, errlen, "gl_writer_open: bad counter list");
      return nullptr;
    }
    for (int c = 0; c < ncounters; c++)
      if (counter_names[c] == nullptr || *counter_names[c] == '\0') {
        set_error(err, errlen, "gl_writer_open: empty counter name");
        return nullptr;
      }
    auto w = std::make_unique<gl_writer>();
    w->path = path;
    w->ncounters = ncounters;
    w->counters.resize(ncounters);
    w->validity.resize(ncounters);

    // open() ourselves: errno gives the plain one-line reason.
    int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      set_error(err, errlen, std::string("cannot open ") + path + ": " + std::strerror(errno));
      return nullptr;
    }
    auto sink = arrow::io::FileOutputStream::Open(fd);  // takes ownership of fd
    if (!sink.ok()) {
      ::close(fd);
      set_error(err, errlen, std::string("cannot open ") + path + ": " +
                                 sink.status().ToString());
      return nullptr;
    }
    w->sink = *sink;
    // No ARROW:schema blob: the file's key/value metadata is exactly what the
    // collector passes to gl_writer_close; Parquet logical types carry the
    // unsigned widths.
    auto arrow_props = parquet::ArrowWriterProperties::Builder().set_use_threads(true)->build();
    auto file = parquet::arrow::FileWriter::Open(
        *make_schema(ncounters, counter_names), writer_pool(), w->sink,
        make_properties(ncounters, counter_names), arrow_props);
    if (!file.ok()) {
      set_error(err, errlen, std::string("cannot start Parquet file ") + path + ": " +
                                 file.status().ToString());
      (void)w->sink->Close();
      return nullptr;
    }
    w->file = std::move(*file);
    return w.release();
  } catch (const std::exception &e) {
    set_error(err, errlen, std::string("gl_writer_open: ") + e.what());
  } catch (...) {
    set_error(err, errlen, "gl_writer_open: unknown C++ exception");
  }
  return nullptr;
}

}  // extern "C"

namespace {

// gl_writer_write and gl_writer_write_columns: the checks, `write` the row
// group, the errors.
template <typename Write>
int write_entry(const char *fn, gl_writer *w, uint32_t thread, bool have_events,
                bool have_counters, size_t n, char *err, size_t errlen, Write write) {
  try {
    if (w == nullptr || !w->file) {
      set_error(err, errlen, std::string(fn) + ": writer is not open");
      return -1;
    }
    if (n > 0 && !have_events) {
      set_error(err, errlen, std::string(fn) + ": events is NULL");
      return -1;
    }
    if (n > 0 && w->ncounters > 0 && !have_counters) {
      set_error(err, errlen, std::string(fn) +
                                 ": counters is NULL but the file has counter columns");
      return -1;
    }
    if (thread > UINT16_MAX) {
      set_error(err, errlen, std::string(fn) + ": thread index " + std::to_string(thread) +
                                 " does not fit the uint16 thread column");
      return -1;
    }
    if (!w->broken.empty()) {
      set_error(err, errlen, "writer for " + w->path + " unusable after: " + w->broken);
      return -1;
    }
    arrow::Status st = write();
    if (!st.ok()) {
      w->broken = "writing row group to " + w->path + ": " + st.ToString();
      set_error(err, errlen, w->broken);
      return -1;
    }
    return 0;
  } catch (const std::exception &e) {
    set_error(err, errlen, std::string(fn) + ": " + e.what());
  } catch (...) {
    set_error(err, errlen, std::string(fn) + ": unknown C++ exception");
  }
  return -1;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int gl_writer_write(gl_writer *w, uint32_t thread,
                                                           const gl_event_t *events,
                                                           const int64_t *counters,
                                                           size_t n, char *err,
                                                           size_t errlen) {
  return write_entry("gl_writer_write", w, thread, events != nullptr, counters != nullptr, n,
                     err, errlen, [&] { return w->write(thread, events, counters, n); });
}

__attribute__((visibility("default"))) int gl_writer_write_columns(
    gl_writer *w, uint32_t thread, const gl_event_columns *columns, size_t n, char *err,
    size_t errlen) {
  bool have = columns != nullptr;
#define GL_FROM_EVENT(name) have = have && columns->name != nullptr;
#define GL_FROM_BUFFER(name)
#define GL_COLUMN(name, type, source) GL_FROM_##source(name)
#include "trace_columns.def"
#undef GL_COLUMN
#undef GL_FROM_EVENT
#undef GL_FROM_BUFFER
  return write_entry("gl_writer_write_columns", w, thread, have,
                     columns != nullptr && columns->counters != nullptr, n, err, errlen,
                     [&] { return w->write_columns(thread, *columns, n); });
}

__attribute__((visibility("default"))) int gl_writer_close(gl_writer *w, size_t nkv,
                                                           const char *const *keys,
                                                           const char *const *values,
                                                           char *err, size_t errlen) {
  // The writer is freed whatever happens: the caller must not reuse it.
  std::unique_ptr<gl_writer> owned(w);
  try {
    if (w == nullptr || !w->file) {
      set_error(err, errlen, "gl_writer_close: writer is not open");
      return -1;
    }
    if (nkv > 0 && (keys == nullptr || values == nullptr)) {
      set_error(err, errlen, "gl_writer_close: keys/values are NULL");
      (void)w->file->Close();
      return -1;
    }
    std::vector<std::string> k, v;
    k.reserve(nkv);
    v.reserve(nkv);
    for (size_t i = 0; i < nkv; i++) {
      k.emplace_back(keys[i] ? keys[i] : "");
      v.emplace_back(values[i] ? values[i] : "");
    }
    arrow::Status st = arrow::Status::OK();
    if (nkv > 0)
      st = w->file->AddKeyValueMetadata(
          std::make_shared<arrow::KeyValueMetadata>(std::move(k), std::move(v)));
    arrow::Status closed = w->file->Close();
    if (st.ok()) st = closed;
    if (st.ok() && !w->sink->closed()) st = w->sink->Close();
    if (!st.ok()) {
      set_error(err, errlen, "closing " + w->path + ": " + st.ToString());
      return -1;
    }
    return 0;
  } catch (const std::exception &e) {
    set_error(err, errlen, std::string("gl_writer_close: ") + e.what());
  } catch (...) {
    set_error(err, errlen, "gl_writer_close: unknown C++ exception");
  }
  return -1;
}

}  // extern "C"
