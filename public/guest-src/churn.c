/* churn [N]: fork + exec + exit N times (page-table churn: every fork copies the address
 * space, every exec builds a new one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--child") == 0) return 0;
    int n = argc > 1 ? atoi(argv[1]) : 50;
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) { execl("/bin/churn", "churn", "--child", (char *)0); _exit(127); }
        if (pid < 0) { perror("fork"); return 1; }
        int st; waitpid(pid, &st, 0);
    }
    printf("churn: %d fork/exec/exit done\n", n);
    return 0;
}
