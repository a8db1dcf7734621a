/* main for a libFuzzer harness under dst (what `cargo dst-fuzz cc
 * --libfuzzer` links, and what LIB_FUZZING_ENGINE can name with -ldst): it
 * hands the harness's functions to libdst, which runs it under an explorer
 * or by itself as libFuzzer binaries run (see sdk-c/api/src/libfuzzer.rs). */
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);
int dst_libfuzzer_main(int *argc, char ***argv, int (*test)(const uint8_t *, size_t),
                       int (*init)(int *, char ***));

int main(int argc, char **argv) {
    return dst_libfuzzer_main(&argc, &argv, LLVMFuzzerTestOneInput, LLVMFuzzerInitialize);
}
