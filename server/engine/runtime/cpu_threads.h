// The CPU thread pools a job runs on, beside LibTorch's own (runtime_info.h sets that one):
// OpenBLAS's pool, and libgomp's wait policy. Torch-free, no link dependency on either library.
//
// OpenBLAS. Debian's LibTorch does its GEMMs in the system BLAS; OpenBLAS (pthread build) keeps
// its own pool, sized to every core unless OPENBLAS_NUM_THREADS says otherwise, so --threads 1
// would still run BLAS calls on all cores. The engine sizes it like LibTorch's intra-op pool,
// through openblas_set_num_threads found at run time (dlsym RTLD_DEFAULT, else the mapped
// OpenBLAS library opened RTLD_NOLOAD): nothing is linked, nothing happens without OpenBLAS.
//
// OMP_WAIT_POLICY. Debian's LibTorch parallelises with OpenMP (libgomp). With the variable
// unset, libgomp makes a thread that finds no work spin for GOMP_SPINCOUNT = 300,000 pause
// iterations (roughly 1-15 ms, by the CPU's pause latency) before it sleeps on a
// futex; ACTIVE spins almost forever (3e10), PASSIVE sleeps at once. LibTorch sets neither.
// Between two parallel ops (preprocessing, the profiler's bookkeeping, NMS, the data loader's
// threads) the idle OpenMP threads therefore burn their cores, which on a shared or small
// machine is time taken from exactly the work being measured (bench/README.md: 2-thread
// forwards took 1-6 s instead of 0.1 s under load). libgomp reads the variable once, in its
// ELF constructor, which runs before main() of any program linked with LibTorch, so setenv()
// afterwards changes nothing: a program must set it before LibTorch is loaded, i.e. re-exec
// itself (ReexecWithPassiveOmpWaitPolicy) or be started with it (the daemon's service unit).
#ifndef LIBREYOLO_SERVER_ENGINE_RUNTIME_CPU_THREADS_H_
#define LIBREYOLO_SERVER_ENGINE_RUNTIME_CPU_THREADS_H_

#include <optional>
#include <string>

#include "common/json/json_writer.h"

namespace libreyolo::engine {

// What a job ran with; the profile's config records it.
struct ThreadSettings {
  int threads = 1;                  // LibTorch intra-op threads in effect
  int interop_threads = 1;          // LibTorch inter-op threads (not changed by the engine)
  std::string blas;                 // LoadedBlas(): "openblas-pthread", "mkl", ...
  std::optional<int> blas_threads;  // OpenBLAS's pool after sizing; nullopt: no OpenBLAS found
  std::string omp_wait_policy;      // OmpWaitPolicy()
};

// OpenBLAS's thread count, or nullopt when no OpenBLAS is loaded in this process.
std::optional<int> OpenBlasThreads();
// Sizes OpenBLAS's pool (n >= 1) and returns the count in effect; nullopt without OpenBLAS.
std::optional<int> SetOpenBlasThreads(int n);

// libgomp's reading of an OMP_WAIT_POLICY value (nullptr = unset): "passive", "active", or
// "default" (unset, or a value libgomp rejects: it then warns and keeps its default, spinning
// GOMP_SPINCOUNT iterations before sleeping). Case-insensitive, surrounding blanks ignored.
std::string DescribeOmpWaitPolicy(const char* value);
// DescribeOmpWaitPolicy of OMP_WAIT_POLICY as this process started with it (read during static
// initialisation, after libgomp's constructor read it too), not as it may have been set since.
std::string OmpWaitPolicy();

// For programs linked with LibTorch, first thing in main(): when neither OMP_WAIT_POLICY nor
// GOMP_SPINCOUNT is set (nobody chose how idle OpenMP threads wait), sets OMP_WAIT_POLICY=PASSIVE
// and re-executes /proc/self/exe with the same arguments, so that libgomp starts with it.
// Returns only when nothing was done (a choice was made and stands; GOMP_SPINCOUNT=300000 alone
// keeps libgomp's default behaviour) or the exec failed (the program then runs with libgomp's
// default). `argv` is main's, null-ended. Measured in bench/README.md ("OMP_WAIT_POLICY").
void ReexecWithPassiveOmpWaitPolicy(char** argv);

// Writes threads, interop_threads, blas, blas_threads (null without OpenBLAS) and
// omp_wait_policy into an open JSON object.
void WriteThreadFields(JsonWriter& w, const ThreadSettings& t);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_RUNTIME_CPU_THREADS_H_
