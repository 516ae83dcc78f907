/* Nested tasks for the recorder and simulator tests: a task-recursive Fibonacci (every task
 * creates two and waits for them: taskwait inside explicit tasks), then a second parallel
 * region whose threads each create a task inside a taskgroup. */
#include <omp.h>
#include <stdio.h>

static long fib(int n) {
    if (n < 2) {
        volatile double x = 0;
        for (int i = 0; i < 20000; i++) x += i;
        return n;
    }
    long a, b;
    #pragma omp task shared(a)
    a = fib(n - 1);
    #pragma omp task shared(b)
    b = fib(n - 2);
    #pragma omp taskwait
    return a + b;
}

int main(void) {
    long r;
    #pragma omp parallel
    #pragma omp single
    r = fib(8);
    #pragma omp parallel
    {
        #pragma omp taskgroup
        {
            #pragma omp task
            {
                volatile double x = 0;
                for (int i = 0; i < 100000; i++) x += i;
            }
        }
    }
    printf("fib %ld\n", r);
    return r == 21 ? 0 : 1;
}
