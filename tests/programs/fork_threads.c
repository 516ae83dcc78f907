/* A multi-threaded rank that forks while another thread records (tests/test_shim_limits.py):
 * thread B makes MPI calls and pauses and resumes the recording (minitrace_pause/_resume, the
 * shim's control, which a Python program calls through minitrace.pause()); the main thread
 * forks argv[1] children, each of which pauses the recording, makes a local MPI call and
 * exits, and runs system("true") and popen("echo") once.  A child that hangs (a lock of the
 * shim held by thread B at the fork, never released in the child) is killed by its alarm.
 * Prints "children RANK EXITED KILLED", "shell RANK ok|failed". */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int minitrace_pause(void) __attribute__((weak));
int minitrace_resume(void) __attribute__((weak));
static volatile int done;

static void *recorder(void *arg) {
    (void)arg;
    int size;
    while (!done) {
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        if (minitrace_pause) minitrace_pause();
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        if (minitrace_resume) minitrace_resume();
    }
    return NULL;
}

int main(int argc, char **argv) {
    int n = atoi(argv[1]), provided, rank, size, exited = 0, killed = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    pthread_t th;
    pthread_create(&th, NULL, recorder, NULL);
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            alarm(10);
            if (minitrace_pause) minitrace_pause();
            MPI_Comm_size(MPI_COMM_WORLD, &size);
            _exit(0);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        exited += WIFEXITED(st) && WEXITSTATUS(st) == 0;
        killed += WIFSIGNALED(st);
    }
    FILE *p = popen("echo popen", "r");
    char line[32] = "";
    int shell = system("true") == 0 && p && fgets(line, sizeof line, p) && pclose(p) == 0;
    done = 1;
    pthread_join(th, NULL);
    printf("children %d %d %d\nshell %d %s\n", rank, exited, killed, rank, shell ? "ok" : "failed");
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
