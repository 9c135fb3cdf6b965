#!/bin/sh
# Cargo's rustc wrapper for this repository: runs the compiler unchanged,
# except that the `toolgate` executable itself is linked statically and
# position-dependent on Linux when the C library's static archives exist.
#
# Why: a hook starts once per tool call, so start-up is most of its cost
# (docs/performance.md). A dynamically linked start spends ~0.3 M
# instructions in the dynamic loader (mapping libc, libm and libgcc_s,
# resolving symbols) and ~0.4 ms of wall time on a 2-core VM; a static
# executable has no loader at all. Only the final link needs this: the flags
# are added to the rustc call that builds the `toolgate` binary, so
# dependencies, build scripts and proc-macros (which cannot be static) are
# compiled as usual and stay shared with an ordinary build.
#
# Opt out with TOOLGATE_PIE=1 (the default PIE, dynamic link; SECURITY.md)
# or TOOLGATE_DYNAMIC=1 (dynamic, position-dependent), then `touch
# src/main.rs` so cargo relinks.
#
# Arguments: the compiler (or a further wrapper such as clippy-driver)
# followed by its arguments, as cargo passes them.
static=
if [ "$(uname -s)" = Linux ] && [ -z "${TOOLGATE_PIE:-}" ] && [ -z "${TOOLGATE_DYNAMIC:-}" ]; then
  name= bin=
  prev=
  for arg in "$@"; do
    case "$prev" in
      --crate-name) name="$arg" ;;
      --crate-type) [ "$arg" = bin ] && bin=1 ;;
    esac
    prev="$arg"
  done
  if [ "$name" = toolgate ] && [ -n "$bin" ]; then
    # `cc -print-file-name` echoes the bare name when the archive is missing
    # (a distribution without static glibc): link dynamically then.
    cc="${CC:-cc}"
    case "$("$cc" -print-file-name=libc.a 2>/dev/null)$("$cc" -print-file-name=libgcc_eh.a 2>/dev/null)" in
      /*/libc.a/*/libgcc_eh.a) static=1 ;;
    esac
  fi
fi
if [ -n "$static" ]; then
  set -- "$@" -C target-feature=+crt-static -C relocation-model=static
  # The functions a hook start runs, laid out together (startup-order.txt,
  # written by benches/hooks/startup-order.sh): ~60 fewer page faults per
  # start. Only with rustc's own LLD — the default linker of
  # x86_64-unknown-linux-gnu since Rust 1.90 — which reads the list; not
  # when the command line picks another linker, and not through another
  # wrapper (clippy-driver: nothing is linked).
  order="$(dirname "$0")/startup-order.txt"
  case "$(basename "$1") $*" in
    *" -C linker="* | *" -Clinker="* | *linker-flavor* | *linker-features* | *link-self-contained* | *" --target "*) ;;
    "rustc "*)
      version="$("$1" -vV 2>/dev/null)"
      minor="$(printf '%s\n' "$version" | sed -n 's/^release: 1\.\([0-9]*\)\..*/\1/p')"
      if [ -f "$order" ] && [ "${minor:-0}" -ge 90 ] &&
        printf '%s\n' "$version" | grep -qx 'host: x86_64-unknown-linux-gnu'; then
        set -- "$@" -C "link-arg=-Wl,--symbol-ordering-file=$order" -C link-arg=-Wl,--no-warn-symbol-ordering
      fi
      ;;
  esac
fi
exec "$@"
