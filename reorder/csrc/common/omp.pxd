# The one place that touches OpenMP. Every other module cimports from here, so the same
# .pyx compiles with and without -fopenmp (prange pragmas are simply ignored when off).
cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    #define REORDER_OPENMP 1
    #define REORDER_OPENMP_VERSION _OPENMP
    #if defined(__linux__) || defined(__APPLE__)
    #include <dlfcn.h>
    /* The file of the OpenMP runtime the kernels call into, or "" when unknown. */
    static inline const char* reorder_omp_library(void) {
        Dl_info info;
        if (dladdr((void*)&omp_get_max_threads, &info) && info.dli_fname)
            return info.dli_fname;
        return "";
    }
    #else
    static inline const char* reorder_omp_library(void) { return ""; }
    #endif
    #else
    static inline const char* reorder_omp_library(void) { return ""; }
    #define REORDER_OPENMP 0
    #define REORDER_OPENMP_VERSION 0
    static inline int omp_get_max_threads(void) { return 1; }
    static inline int omp_get_thread_num(void) { return 0; }
    static inline int omp_get_num_procs(void) { return 1; }
    #endif
    #ifndef REORDER_BUILD_FLAGS
    #define REORDER_BUILD_FLAGS ""
    #endif
    """
    bint REORDER_OPENMP
    int REORDER_OPENMP_VERSION
    const char* REORDER_BUILD_FLAGS
    int omp_get_max_threads() noexcept nogil
    int omp_get_thread_num() noexcept nogil
    int omp_get_num_procs() noexcept nogil
    const char* reorder_omp_library() noexcept nogil
