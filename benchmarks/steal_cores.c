/* Machine B for benchmarks/bench_elsewhere.py: slower cores made from this machine's.

   One process per core, pinned to it at SCHED_FIFO priority, takes STEAL_US of every
   PERIOD_US of that core: it sleeps to the next multiple of PERIOD_US of CLOCK_MONOTONIC (the
   same instants on every core, so that all cores stop together, as a slower clock would, and
   a rank never waits for a partner stopped alone) and runs until STEAL_US later.  While it
   holds the core it writes through KIB KiB of its own memory, one cache line after the other
   (0: it only spins), so that the ranks find that core's caches emptied of their data when they
   get it back: cache-resident work slows more than compute on registers or streaming work.

   Usage: steal_cores CPU PERIOD_US STEAL_US KIB   (runs until killed or its parent ends;
   needs root for SCHED_FIFO) */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: steal_cores CPU PERIOD_US STEAL_US KIB\n");
        return 2;
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);      /* never left stealing after the benchmark */
    if (getppid() == 1) return 1;
    int cpu = atoi(argv[1]);
    int64_t period = atoll(argv[2]) * 1000, steal = atoll(argv[3]) * 1000;
    size_t words = (size_t)atol(argv[4]) * 128;           /* doubles in KIB KiB */
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    struct sched_param prio = {.sched_priority = 50};
    if (period <= steal || steal <= 0 || sched_setaffinity(0, sizeof set, &set)
        || sched_setscheduler(0, SCHED_FIFO, &prio)) {
        perror("steal_cores: bad period/steal, or no affinity/SCHED_FIFO");
        return 1;
    }
    volatile double *buf = malloc((words + 1) * sizeof(double));
    if (!buf) return 1;
    for (size_t i = 0; i < words; i++) buf[i] = 1.0;      /* its pages touched before */
    size_t at = 0;
    int64_t next = (now_ns() / period + 1) * period;
    for (;;) {
        struct timespec t = {next / 1000000000LL, next % 1000000000LL};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
        while (now_ns() < next + steal)
            for (int k = 0; k < 256 && words; k++) {      /* one line per write */
                buf[at] += 1.0;
                at = at + 8 < words ? at + 8 : 0;
            }
        next += period;
        int64_t late = now_ns();
        if (next <= late) next = (late / period + 1) * period;  /* missed: the next instant */
    }
}
