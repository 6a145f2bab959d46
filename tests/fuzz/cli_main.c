/* cli_main.c — the command line (cli/main.c) for fuzz_cli.c, with its main
 * renamed ssk_cli_main (libFuzzer has the program's main). */
#define main ssk_cli_main
#include "../../cli/main.c"
