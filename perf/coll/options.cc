// SPDX-License-Identifier: Apache-2.0
#include "options.hpp"

#include <cstdlib>
#include <cstring>

namespace perf {
namespace {

bool parse_bytes(const char* s, size_t* out) {
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (end == s || v < 0) return false;
  double mul = 1;
  switch (*end) {
    case 'K':
    case 'k':
      mul = 1024;
      ++end;
      break;
    case 'M':
    case 'm':
      mul = 1 << 20;
      ++end;
      break;
    case 'G':
    case 'g':
      mul = 1 << 30;
      ++end;
      break;
    default:
      break;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') return false;
  *out = static_cast<size_t>(v * mul);
  return true;
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

/// nccl-tests' long flags, as the short ones they stand for.
constexpr struct {
  const char* name;
  const char* flag;
} kLong[] = {{"--minbytes", "-b"},   {"--maxbytes", "-e"},    {"--stepbytes", "-i"},
             {"--stepfactor", "-f"}, {"--ngpus", "-g"},       {"--nthreads", "-t"},
             {"--iters", "-n"},      {"--agg_iters", "-m"},   {"--warmup_iters", "-w"},
             {"--check", "-c"},      {"--datatype", "-d"},    {"--op", "-o"},
             {"--root", "-r"},       {"--blocking", "-z"},    {"--cudagraph", "-G"},
             {"--average", "-a"},    {"--registration", "-R"}};

std::string short_flag(const std::string& flag) {
  for (const auto& l : kLong)
    if (flag == l.name) return l.flag;
  return flag;
}

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
  for (int i = 1; i < argc; ++i) {
    const std::string typed = argv[i], flag = short_flag(typed);
    const bool has_value = i + 1 < argc;
    const char* v = has_value ? argv[i + 1] : "";
    auto bad = [&](const char* what) {
      *error = typed + " " + v + ": " + what;
      return false;
    };
    if (flag == "--compare-nccl") {
      o->compare_nccl = true;
      continue;
    }
    if (flag == "--p2p") {
      o->p2p = true;
      continue;
    }
    if (!has_value) return bad("needs a value");
    ++i;
    int n = 0;
    if (flag == "-b") {
      if (!parse_bytes(v, &o->min_bytes)) return bad("not a size");
    } else if (flag == "-e") {
      if (!parse_bytes(v, &o->max_bytes)) return bad("not a size");
    } else if (flag == "-f") {
      o->factor = std::atof(v);
      if (o->factor <= 1) return bad("must be > 1");
    } else if (flag == "-i") {
      if (!parse_bytes(v, &o->increment)) return bad("not a size");
    } else if (flag == "-t") {
      // nccl-tests' threads per process: gicl drives a process's GPUs from one thread (-g).
      if (!parse_int(v, 1, 1, &n)) return bad("only 1: use -g N for several GPUs in a process");
    } else if (flag == "-g") {
      if (!parse_int(v, 1, 64, &o->gpus)) return bad("must be 1..64");
    } else if (flag == "-n") {
      if (!parse_int(v, 1, 1 << 24, &o->iters)) return bad("must be >= 1");
    } else if (flag == "-m") {
      if (!parse_int(v, 1, 1 << 20, &o->agg_iters)) return bad("must be >= 1");
    } else if (flag == "-w") {
      if (!parse_int(v, 0, 1 << 24, &o->warmup)) return bad("must be >= 0");
    } else if (flag == "-c") {
      if (!parse_int(v, 0, 1 << 20, &o->check)) return bad("must be >= 0");
    } else if (flag == "-d") {
      o->dtypes.clear();
      if (std::strcmp(v, "all") == 0) {
        for (int d = 0; d < gicl_num_datatypes; ++d)
          o->dtypes.push_back(static_cast<gicl_datatype_t>(d));
      } else {
        o->dtypes.resize(1);
        if (!parse_dtype(v, &o->dtypes[0])) return bad("unknown type");
      }
    } else if (flag == "-o") {
      o->ops.clear();
      if (std::strcmp(v, "all") == 0) {
        for (int r = 0; r < gicl_num_redops; ++r) o->ops.push_back(static_cast<gicl_redop_t>(r));
      } else {
        o->ops.resize(1);
        if (!parse_op(v, &o->ops[0])) return bad("unknown op");
      }
    } else if (flag == "-r") {
      o->all_roots = std::strcmp(v, "all") == 0;
      if (!o->all_roots && !parse_int(v, 0, 1 << 24, &o->root)) return bad("must be >= 0 or all");
      if (o->all_roots) o->root = 0;
    } else if (flag == "-z") {
      if (!parse_int(v, 0, 1, &n)) return bad("must be 0 or 1");
      o->blocking = n;
    } else if (flag == "-G") {
      if (!parse_int(v, 0, 1 << 20, &o->graph_iters)) return bad("must be >= 0");
    } else if (flag == "-a") {
      if (!parse_int(v, 0, 3, &o->average)) return bad("must be 0..3");
    } else if (flag == "-R") {
      if (!parse_int(v, 0, 2, &o->registration)) return bad("must be 0..2");
    } else if (flag == "--algo") {
      o->algo = v;
    } else if (flag == "--json") {
      o->json = v;
    } else {
      *error = "unknown flag " + flag;
      return false;
    }
  }
  if (o->min_bytes > o->max_bytes) {
    *error = "-b is larger than -e";
    return false;
  }
  return true;
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

double busbw_factor(const std::string& c, int n) {
  if (n <= 1) return c == "broadcast" || c == "reduce" || c == "sendrecv" ? 1.0 : 0.0;
  if (c == "all_reduce") return 2.0 * (n - 1) / n;
  if (c == "reduce_scatter" || c == "all_gather" || c == "alltoall") return double(n - 1) / n;
  return 1.0;  // broadcast, reduce, sendrecv
}

}  // namespace perf
