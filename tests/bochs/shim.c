/* glibc 2.38 names that the bochscpu 0.4.0 wheel imports, forwarded to the classic
 * functions of Debian 12's glibc 2.36 (C23 only adds 0b prefixes to them, which Bochs'
 * parsing of its own option strings does not use). Loaded with LD_PRELOAD by run. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
unsigned long long __isoc23_strtoull(const char *s, char **e, int b) { return strtoull(s, e, b); }
long long __isoc23_strtoll(const char *s, char **e, int b) { return strtoll(s, e, b); }
unsigned long __isoc23_strtoul(const char *s, char **e, int b) { return strtoul(s, e, b); }
long __isoc23_strtol(const char *s, char **e, int b) { return strtol(s, e, b); }
int __isoc23_sscanf(const char *s, const char *f, ...) { va_list ap; va_start(ap, f); int r = vsscanf(s, f, ap); va_end(ap); return r; }
