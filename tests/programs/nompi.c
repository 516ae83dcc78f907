/* Not an MPI program: preloading the shim must change nothing. */
#include <stdio.h>
int main(int argc, char **argv) {
    long s = 0;
    for (int i = 0; i < 1000; i++) s += i * argc;
    printf("sum %ld args %d\n", s, argc);
    return 7;
}
