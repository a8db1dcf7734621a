/* main of a libFuzzer harness linked with dst's fuzzing engine
 * (libdst_engine.a): hands the harness's functions to the engine
 * (src/lib.rs), as libFuzzer's own main does. */
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);
int dst_engine_main(int *argc, char ***argv, int (*test)(const uint8_t *, size_t),
                    int (*init)(int *, char ***));

int main(int argc, char **argv) {
    return dst_engine_main(&argc, &argv, LLVMFuzzerTestOneInput, LLVMFuzzerInitialize);
}
