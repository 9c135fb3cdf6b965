// The floor of a stdio hop for benches/upstream_hop.py: runs argv[1..] as a child and copies
// our stdin to its stdin and its stdout to our stdout (poll, read, write; no parsing).
#include <poll.h>
#include <unistd.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
int main(int argc, char **argv) {
  int in[2], out[2]; pipe(in); pipe(out);
  pid_t p = fork();
  if (p == 0) { dup2(in[0], 0); dup2(out[1], 1); close(in[1]); close(out[0]); execvp(argv[1], argv + 1); _exit(127); }
  close(in[0]); close(out[1]);
  struct pollfd f[2] = {{0, POLLIN, 0}, {out[0], POLLIN, 0}};
  char buf[65536];
  for (;;) {
    if (poll(f, 2, -1) < 0) return 1;
    if (f[0].revents) { ssize_t n = read(0, buf, sizeof buf); if (n <= 0) { close(in[1]); f[0].fd = -1; } else write(in[1], buf, n); }
    if (f[1].revents) { ssize_t n = read(out[0], buf, sizeof buf); if (n <= 0) break; write(1, buf, n); }
  }
  waitpid(p, 0, 0); return 0;
}
