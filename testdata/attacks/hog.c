// hog: takes what a run's cgroup must bound, from inside the sandbox, and says how far
// it got. Each mode prints one line, "MODE N", N being what it held when it stopped
// (reached its target or was refused); a kill by the kernel prints nothing more.
//   hog memfd MIB      MIB memfds of 1 MiB each, every page written (memory the command
//                      holds outside its address space: RLIMIT_AS does not see it)
//   hog inodes N DIR   N empty files in DIR (a tmpfs: its --size bounds pages, not inodes)
//   hog fork N         N children that sleep (tasks; RLIMIT_NPROC binds no root caller)
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <signal.h>
#include <sys/mman.h>

static void report(const char *mode, long n) { printf("%s %ld\n", mode, n); fflush(stdout); }

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: hog memfd MIB | inodes N DIR | fork N\n"); return 2; }
  long target = atol(argv[2]);
  static char page[1 << 20];
  memset(page, 1, sizeof page);
  long n = 0;
  if (strcmp(argv[1], "memfd") == 0) {
    for (; n < target; n++) {
      int fd = memfd_create("hog", 0);
      if (fd < 0 || write(fd, page, sizeof page) != (ssize_t)sizeof page) break;
    }
  } else if (strcmp(argv[1], "inodes") == 0 && argc > 3) {
    char path[4096];
    for (; n < target; n++) {
      snprintf(path, sizeof path, "%s/f%ld", argv[3], n);
      int fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0644);
      if (fd < 0) break;
      close(fd);
    }
  } else if (strcmp(argv[1], "fork") == 0) {
    for (; n < target; n++) {
      pid_t pid = fork();
      if (pid < 0) break;
      if (pid == 0) { pause(); _exit(0); }
    }
  } else {
    fprintf(stderr, "hog: unknown mode %s\n", argv[1]);
    return 2;
  }
  report(argv[1], n);
  return 0;
}
