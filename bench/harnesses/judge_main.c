/* The coverage judge's main: runs a libFuzzer harness (built with clang's
 * -fprofile-instr-generate -fcoverage-mapping) on every file named on the
 * command line, each in a child process, so that an input that crashes or
 * hangs costs that input's coverage and not the rest. Profiles merge into
 * LLVM_PROFILE_FILE (give it %m, the merge-pool pattern). The same judge
 * replays every engine's final corpus (bench/harnesses/run.sh). */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static int run_one(const char *path) {
    FILE *file = fopen(path, "rb");
    if (!file) return 1;
    size_t cap = 1 << 16, len = 0;
    uint8_t *data = malloc(cap);
    size_t got;
    while (data && (got = fread(data + len, 1, cap - len, file)) > 0) {
        len += got;
        if (len == cap) data = realloc(data, cap *= 2);
    }
    fclose(file);
    if (!data) return 1;
    LLVMFuzzerTestOneInput(data, len);
    free(data);
    return 0;
}

int main(int argc, char **argv) {
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        pid_t child = fork();
        if (child == 0) {
            alarm(10);
            exit(run_one(argv[i]));
        }
        int status;
        if (child > 0) waitpid(child, &status, 0);
    }
    return 0;
}
