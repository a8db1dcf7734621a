/* main of a libFuzzer harness linked with dst's fuzzing engine
 * (libdst_engine.a): hands the harness's functions to the engine
 * (src/lib.rs), as libFuzzer's own main does. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);
int dst_engine_main(int *argc, char ***argv, int (*test)(const uint8_t *, size_t),
                    int (*init)(int *, char ***));

/* A sanitizer's report ends the process with exit(1) (OSS-Fuzz's
 * ASAN_OPTIONS), not with a signal the explorer's handlers see: on death,
 * abort instead, which they do see (libFuzzer sets a death callback too). */
__attribute__((weak)) void __sanitizer_set_death_callback(void (*callback)(void));

static void on_sanitizer_death(void) { abort(); }

int main(int argc, char **argv) {
    if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(on_sanitizer_death);
    return dst_engine_main(&argc, &argv, LLVMFuzzerTestOneInput, LLVMFuzzerInitialize);
}
