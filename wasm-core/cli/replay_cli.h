/* vmsim replay: the CLI's subcommand (replay.c). */
#ifndef VMSIM_REPLAY_CLI_H
#define VMSIM_REPLAY_CLI_H

#include <stdbool.h>
#include <stddef.h>

struct strbuf;

int replay_main(int argc, char **argv);
/* machine.c: appends ,"machine":{...} (the replay option) from a hw-lab result's text;
 * false with err set when it is not one. */
bool machine_option(const char *text, size_t len, struct strbuf *o, char *err, size_t errlen);

#endif
