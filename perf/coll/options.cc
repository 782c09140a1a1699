// SPDX-License-Identifier: Apache-2.0
#include "options.hpp"

#include <getopt.h>

#include <cstdlib>
#include <cstring>

#include "gicl/gicl.h"

namespace perf {
namespace {

// The library's parser, so sizes read the same in every tool and setting.
bool parse_bytes(const char* s, size_t* out) {
  return gicl_parse_size(s, out) == GICL_SUCCESS;
}

bool parse_int(const char* s, int lo, int hi, int* out) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

constexpr struct {
  const char* name;
  gicl_datatype_t d;
} kTypes[] = {
    {"int8", gicl_int8},       {"uint8", gicl_uint8},        {"int32", gicl_int32},
    {"uint32", gicl_uint32},   {"int64", gicl_int64},        {"uint64", gicl_uint64},
    {"half", gicl_float16},    {"float16", gicl_float16},    {"bfloat16", gicl_bfloat16},
    {"float", gicl_float32},   {"float32", gicl_float32},    {"double", gicl_float64},
    {"float64", gicl_float64}, {"f8e4m3", gicl_float8_e4m3}, {"f8e5m2", gicl_float8_e5m2}};
constexpr struct {
  const char* name;
  gicl_redop_t op;
} kOps[] = {{"sum", gicl_sum},
            {"prod", gicl_prod},
            {"max", gicl_max},
            {"min", gicl_min},
            {"avg", gicl_avg}};

// nccl-tests' long flags (and gicl's own), each with its short letter where it has one.
enum LongOnly : int { kCompareNccl = 256, kP2p, kAlgo, kJson };
constexpr option kLong[] = {{"minbytes", required_argument, nullptr, 'b'},
                            {"maxbytes", required_argument, nullptr, 'e'},
                            {"stepbytes", required_argument, nullptr, 'i'},
                            {"stepfactor", required_argument, nullptr, 'f'},
                            {"ngpus", required_argument, nullptr, 'g'},
                            {"nthreads", required_argument, nullptr, 't'},
                            {"iters", required_argument, nullptr, 'n'},
                            {"agg_iters", required_argument, nullptr, 'm'},
                            {"warmup_iters", required_argument, nullptr, 'w'},
                            {"check", required_argument, nullptr, 'c'},
                            {"datatype", required_argument, nullptr, 'd'},
                            {"op", required_argument, nullptr, 'o'},
                            {"root", required_argument, nullptr, 'r'},
                            {"blocking", required_argument, nullptr, 'z'},
                            {"cudagraph", required_argument, nullptr, 'G'},
                            {"average", required_argument, nullptr, 'a'},
                            {"registration", required_argument, nullptr, 'R'},
                            {"output_file", required_argument, nullptr, 'J'},
                            {"help", no_argument, nullptr, 'h'},
                            {"compare-nccl", optional_argument, nullptr, kCompareNccl},
                            {"p2p", no_argument, nullptr, kP2p},
                            {"algo", required_argument, nullptr, kAlgo},
                            {"json", required_argument, nullptr, kJson},
                            {nullptr, 0, nullptr, 0}};
// '+': no reordering of argv; ':': a missing value is reported as ':' rather than '?'.
constexpr char kShort[] = "+:b:e:i:f:g:t:n:m:w:c:d:o:r:z:G:a:R:J:h";

}  // namespace

bool parse_dtype(const std::string& s, gicl_datatype_t* d) {
  for (const auto& t : kTypes)
    if (s == t.name) return *d = t.d, true;
  return false;
}

bool parse_op(const std::string& s, gicl_redop_t* op) {
  for (const auto& o : kOps)
    if (s == o.name) return *op = o.op, true;
  return false;
}

const char* dtype_label(gicl_datatype_t d) {
  static const char* kLabels[] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                                  "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  return d >= 0 && d < gicl_num_datatypes ? kLabels[d] : "?";
}

const char* op_label(gicl_redop_t op) {
  return op >= 0 && op < gicl_num_redops ? kOps[op].name : "?";
}

bool parse_coll_options(int argc, char** argv, CollOptions* o, std::string* error) {
  optind = 0;  // a fresh scan each call (GNU getopt's full reset)
  opterr = 0;  // the messages below name the flag as typed
  for (;;) {
    int index = -1;
    const int c = getopt_long(argc, argv, kShort, kLong, &index);
    if (c == -1) break;
    // The flag as the user spelled it, for messages.
    const std::string flag = index >= 0             ? std::string("--") + kLong[index].name
                             : c == '?' || c == ':' ? std::string(argv[optind - 1])
                                                    : std::string("-") + static_cast<char>(c);
    const char* v = optarg ? optarg : "";
    auto bad = [&](const char* what) {
      *error = flag + " " + v + ": " + what;
      return false;
    };
    int n = 0;
    switch (c) {
      case 'h':
        o->help = true;
        return true;
      case kCompareNccl:
        o->compare_nccl = true;
        if (const std::string w = v; w.empty() || w == "best")
          o->nccl_configs = kNcclSymmetric | kNcclDefault;
        else if (w == "sym")
          o->nccl_configs = kNcclSymmetric;
        else if (w == "default")
          o->nccl_configs = kNcclDefault;
        else
          return bad("is not best, sym or default");
        break;
      case kP2p:
        o->p2p = true;
        break;
      case kAlgo:
        o->algo = v;
        break;
      case kJson:
      case 'J':
        o->json = v;
        break;
      case 'b':
        if (!parse_bytes(v, &o->min_bytes)) return bad("not a size");
        break;
      case 'e':
        if (!parse_bytes(v, &o->max_bytes)) return bad("not a size");
        break;
      case 'f':
        o->factor = std::atof(v);
        if (o->factor <= 1) return bad("must be > 1");
        break;
      case 'i':
        if (!parse_bytes(v, &o->increment)) return bad("not a size");
        break;
      case 't':
        // nccl-tests' threads per process: gicl drives a process's GPUs from one thread (-g).
        if (!parse_int(v, 1, 1, &n)) return bad("only 1: use -g N for several GPUs in a process");
        break;
      case 'g':
        if (!parse_int(v, 1, 64, &o->gpus)) return bad("must be 1..64");
        break;
      case 'n':
        if (!parse_int(v, 1, 1 << 24, &o->iters)) return bad("must be >= 1");
        break;
      case 'm':
        if (!parse_int(v, 1, 1 << 20, &o->agg_iters)) return bad("must be >= 1");
        break;
      case 'w':
        if (!parse_int(v, 0, 1 << 24, &o->warmup)) return bad("must be >= 0");
        break;
      case 'c':
        if (!parse_int(v, 0, 1 << 20, &o->check)) return bad("must be >= 0");
        break;
      case 'd':
        o->dtypes.clear();
        if (std::strcmp(v, "all") == 0) {
          for (int d = 0; d < gicl_num_datatypes; ++d)
            o->dtypes.push_back(static_cast<gicl_datatype_t>(d));
        } else {
          o->dtypes.resize(1);
          if (!parse_dtype(v, &o->dtypes[0])) return bad("unknown type");
        }
        break;
      case 'o':
        o->ops.clear();
        if (std::strcmp(v, "all") == 0) {
          for (int r = 0; r < gicl_num_redops; ++r) o->ops.push_back(static_cast<gicl_redop_t>(r));
        } else {
          o->ops.resize(1);
          if (!parse_op(v, &o->ops[0])) return bad("unknown op");
        }
        break;
      case 'r':
        o->all_roots = std::strcmp(v, "all") == 0;
        if (!o->all_roots && !parse_int(v, 0, 1 << 24, &o->root)) return bad("must be >= 0 or all");
        if (o->all_roots) o->root = 0;
        break;
      case 'z':
        if (!parse_int(v, 0, 1, &n)) return bad("must be 0 or 1");
        o->blocking = n;
        break;
      case 'G':
        if (!parse_int(v, 0, 1 << 20, &o->graph_iters)) return bad("must be >= 0");
        break;
      case 'a':
        if (!parse_int(v, 0, 3, &o->average)) return bad("must be 0..3");
        break;
      case 'R':
        if (!parse_int(v, 0, 2, &o->registration)) return bad("must be 0..2");
        break;
      case ':':
        *error = flag + ": needs a value";
        return false;
      default:
        *error = "unknown flag " + flag;
        return false;
    }
  }
  if (optind < argc) {
    *error = std::string("unexpected argument '") + argv[optind] + "'";
    return false;
  }
  if (o->min_bytes > o->max_bytes) {
    *error = "-b is larger than -e";
    return false;
  }
  return true;
}

const char* coll_usage() {
  return "  -b, --minbytes SIZE      smallest message (default 32)\n"
         "  -e, --maxbytes SIZE      largest message (default 32M)\n"
         "  -f, --stepfactor F       multiply the size by F between steps (default 2)\n"
         "  -i, --stepbytes SIZE     add SIZE between steps instead\n"
         "  -g, --ngpus N            GPUs (ranks) driven by this process (default 1)\n"
         "  -t, --nthreads 1         threads per process (gicl drives its GPUs from one)\n"
         "  -n, --iters N            timed calls per size (default 20)\n"
         "  -w, --warmup_iters N     untimed calls first (default 5)\n"
         "  -m, --agg_iters N        calls per timed iteration, grouped (default 1)\n"
         "  -c, --check N            checked calls per size (default 1; 0: none)\n"
         "  -d, --datatype T         int8 uint8 int32 uint32 int64 uint64 half float double\n"
         "                           bfloat16 f8e4m3 f8e5m2, or all (default float)\n"
         "  -o, --op OP              sum prod max min avg, or all (default sum)\n"
         "  -r, --root R             root rank, or all (default 0)\n"
         "  -z, --blocking 0|1       synchronize after each call\n"
         "  -G, --cudagraph N        capture the -n calls in a CUDA graph, replay it N times\n"
         "  -a, --average 0..3       across ranks: 0 rank 0, 1 average, 2 min, 3 max (default 1)\n"
         "  -R, --registration 0..2  buffers: 0 cudaMalloc, 1 registered, 2 symmetric\n"
         "  -J, --output_file FILE   also write the results as JSON (--json FILE too)\n"
         "      --algo NAME          force an algorithm (GICL_ALGO)\n"
         "      --compare-nccl[=W]   run NCCL (libnccl.so.2) beside gicl, ratio printed: W best "
         "(the\n"
         "                           faster of symmetric windows and cudaMalloc buffers per size,\n"
         "                           the default), sym or default\n"
         "      --p2p                alltoall_perf: gicl's call as grouped send/recv\n"
         "  -h, --help               this text\n"
         "SIZE: digits with an optional K, M, G or T suffix (powers of 1024).\n";
}

std::vector<size_t> sweep(const CollOptions& o, size_t element_bytes) {
  std::vector<size_t> out;
  for (double b = static_cast<double>(o.min_bytes);
       b <= static_cast<double>(o.max_bytes) * 1.0000001;
       b = o.increment ? b + static_cast<double>(o.increment) : b * o.factor) {
    size_t bytes = static_cast<size_t>(b) / element_bytes * element_bytes;
    if (bytes == 0) bytes = element_bytes;
    if (out.empty() || out.back() != bytes) out.push_back(bytes);
    if (o.increment == 0 && o.factor <= 1) break;
  }
  return out;
}

}  // namespace perf
