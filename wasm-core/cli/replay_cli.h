/* vmsim replay: the CLI's subcommand (replay.c). */
#ifndef VMSIM_REPLAY_CLI_H
#define VMSIM_REPLAY_CLI_H

int replay_main(int argc, char **argv);

#endif
