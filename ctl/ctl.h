/* ctl.h - hybridctl's subcommands, one file each; private to ctl/. */
#ifndef HYBRIDFS_CTL_H
#define HYBRIDFS_CTL_H

/* `hybridctl trace export ...`: @argc/@argv start after "export".
 * Returns the exit status: 0, 1 (cannot read), 2 (bad command line). */
int hy_ctl_trace_export(int argc, char **argv);

#endif
