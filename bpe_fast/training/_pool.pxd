# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The kernel's threads: a pool made with the kernel and ended with it.

Invariant: ``run(fn, arg)`` calls fn(arg, t) once for every thread t (t = 0 on the calling
thread) and returns only when every call has returned; between runs the threads only wait. The
threads are C++ std::thread: no OpenMP runtime to build against, which Apple's compiler lacks,
or to leave behind in a process that forks counting workers later. A pool that cannot have its
threads raises (RuntimeError) and has ended those it started. Also the clocks the kernel reads
(wall seconds, and CPU seconds of the calling thread).
"""

ctypedef void (*job_fn)(void*, int) noexcept nogil

cdef extern from *:
    """
    #include <chrono>
    #include <time.h>
    #include <condition_variable>
    #include <mutex>
    #include <thread>
    #include <vector>

    /* Threads 1..n-1 wait for jobs; run() does part 0 on the calling thread and returns when
       every part is done. Made with the kernel, joined when it is freed. */
    typedef void (*bpe_job_fn)(void*, int);
    struct BpePool {
        std::vector<std::thread> threads;
        std::mutex mu;
        std::condition_variable wake, done;
        bpe_job_fn fn = nullptr;
        void* arg = nullptr;
        unsigned long generation = 0;
        size_t pending = 0;
        bool stop = false;

        explicit BpePool(int n) {
            try {
                for (int t = 1; t < n; ++t) threads.emplace_back([this, t] { loop(t); });
            } catch (...) {         /* no more threads to be had: end those started, then say so */
                finish();
                throw;
            }
        }
        ~BpePool() { finish(); }
        void finish() {
            { std::lock_guard<std::mutex> g(mu); stop = true; }
            wake.notify_all();
            for (auto& th : threads) th.join();
            threads.clear();
        }
        void loop(int t) {
            unsigned long seen = 0;
            for (;;) {
                bpe_job_fn f;
                void* a;
                {
                    std::unique_lock<std::mutex> g(mu);
                    wake.wait(g, [&] { return stop || generation != seen; });
                    if (stop) return;
                    seen = generation;
                    f = fn;
                    a = arg;
                }
                f(a, t);
                std::lock_guard<std::mutex> g(mu);
                if (--pending == 0) done.notify_one();
            }
        }
        void run(bpe_job_fn f, void* a) {
            {
                std::lock_guard<std::mutex> g(mu);
                fn = f;
                arg = a;
                pending = threads.size();
                ++generation;
            }
            wake.notify_all();
            f(a, 0);
            std::unique_lock<std::mutex> g(mu);
            done.wait(g, [&] { return pending == 0; });
        }
    };


    static double bpe_now(void) {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    }

    /* CPU seconds the calling thread has run: what a part of a merge costs, whatever the load
       (0 where there is no such clock). */
    #if defined(CLOCK_THREAD_CPUTIME_ID)
    static double bpe_thread_cpu(void) {
        struct timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    }
    #else
    static double bpe_thread_cpu(void) { return 0.0; }
    #endif
    """
    cdef cppclass Pool "BpePool":
        Pool(int) except +
        void run(job_fn, void*) nogil
    double now "bpe_now"() nogil
    double thread_cpu "bpe_thread_cpu"() nogil
