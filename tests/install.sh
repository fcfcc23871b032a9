#!/usr/bin/env bash
# The installed package, as a distribution or another program sees it: `cmake --install`
# of this build into a temporary prefix, then
#   - the files: tool, libmemsnap.so with its SONAME, headers, pkg-config file, man page,
#     bash completion (and libmemsnap.a when MEMSNAP_INSTALL_STATIC is on);
#   - every public header compiles on its own, as C11 and as C++;
#   - the install goes into a prefix other than the configured one (cmake --install
#     --prefix), and the package relocates: memsnap.pc and the CMake package files find the
#     files where they were installed, and again after the tree is moved;
#   - examples/*.c compile against the installed headers and library with nothing but
#     `pkg-config --cflags --libs memsnap`, and with find_package(memsnap), and print the allocator's own counters from
#     testdata/*.truth.json (peak.c: requested_bytes.all.peak; leaks.c: the injected
#     leaks);
#   - libmemsnap.so exports exactly the functions the headers declare with MS_API.
# usage: install.sh BUILD_DIR CC [EXTRA_CFLAGS]   (run from the source root; EXTRA_CFLAGS
# carries the sanitizer flags of a -DMEMSNAP_SANITIZE build, whose library needs them)
set -uo pipefail
build=$1 cc=$2 extra=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
pass=0 fail=0
ok() { echo "ok $1"; pass=$((pass+1)); }
bad() { echo "FAIL $1"; fail=$((fail+1)); }

if ! cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" 2>&1; then
  echo "FAIL cmake --install: $(tail -5 "$tmp/install.log")"; exit 1
fi
ok "cmake --install into a temporary prefix ($(grep -c Installing "$tmp/install.log") files)"

pc=$(find "$prefix" -name memsnap.pc)
libdir=$(dirname "$(dirname "$pc")")
for f in bin/memsnap include/memsnap/memsnap.h include/memsnap/version.h include/memsnap/export.h \
         share/man/man1/memsnap.1 share/bash-completion/completions/memsnap; do
  [ -s "$prefix/$f" ] && ok "installed $f" || bad "missing $f"
done
[ -n "$pc" ] && [ -L "$libdir/libmemsnap.so" ] && ok "installed $libdir/libmemsnap.so" || bad "no memsnap.pc or libmemsnap.so"
version=$("$build/memsnap" --version | awk '{print $2}')
soname=$(readelf -d "$libdir/libmemsnap.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
want_soname=libmemsnap.so.$(echo "$version" | awk -F. '{print ($1 == 0) ? $1 "." $2 : $1}')
[ "$soname" = "$want_soname" ] && [ -e "$libdir/$soname" ] && ok "SONAME $soname" || bad "SONAME '$soname', want $want_soname"
[ "$("$prefix/bin/memsnap" --version)" = "memsnap $version" ] && ok "installed memsnap --version" || bad "installed memsnap --version"

# pkg-config as a user runs it, nothing defined: the prefix was chosen at install time,
# not at configure time, and the .pc file must point there by itself.
configured=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
[ "$configured" != "$prefix" ] && ok "installed into $prefix, configured for ${configured:-?}" || bad "prefix not different"
export PKG_CONFIG_PATH=$(dirname "$pc")
pkgc() { pkg-config "$@" memsnap; }
incdir=$(pkgc --variable=includedir)
[ "$(realpath -m "$incdir")" = "$(realpath "$prefix/include")" ] && ok "memsnap.pc: includedir is $prefix/include" \
  || bad "memsnap.pc: includedir '$incdir', want $prefix/include ($(grep ^prefix= "$pc"))"
[ "$(realpath -m "$(pkgc --variable=libdir)")" = "$(realpath "$libdir")" ] && ok "memsnap.pc: libdir is $libdir" \
  || bad "memsnap.pc: libdir '$(pkgc --variable=libdir)', want $libdir"
[ "$(pkgc --modversion)" = "$version" ] && ok "pkg-config --modversion $version" || bad "pkg-config --modversion: $(pkgc --modversion 2>&1)"
flags="$(pkgc --cflags) $(pkgc --libs)"
case "$flags" in *"$(pwd)"*) bad "pkg-config points into the source tree: $flags" ;; esac

# Every header on its own, in C11 (pedantic) and, where a C++ compiler is, in C++.
cxx=$(command -v c++ || true)
for h in "$prefix"/include/memsnap/*.h; do
  name=memsnap/$(basename "$h")
  printf '#include <%s>\nint main(void) { return 0; }\n' "$name" > "$tmp/h.c"
  if ! $cc -std=c11 -pedantic -Wall -Wextra -Werror $(pkgc --cflags) -fsyntax-only "$tmp/h.c" 2> "$tmp/err"; then
    bad "$name as C11: $(head -c 300 "$tmp/err")"; continue; fi
  if [ -n "$cxx" ] && ! $cxx -x c++ -std=c++17 -Wall -Werror $(pkgc --cflags) -fsyntax-only "$tmp/h.c" 2> "$tmp/err"; then
    bad "$name as C++: $(head -c 300 "$tmp/err")"; continue; fi
  ok "$name compiles alone (C11${cxx:+, C++})"
done

# The examples, against the installed package only.
for src in examples/*.c; do
  name=$(basename "$src" .c)
  if $cc -std=c11 -Wall -Wextra -Werror $extra "$src" $(pkgc --cflags --libs) -o "$tmp/$name" 2> "$tmp/err"; then
    ok "examples/$name.c builds with pkg-config --cflags --libs memsnap"
  else
    bad "examples/$name.c: $(head -c 400 "$tmp/err")"
  fi
done
export LD_LIBRARY_PATH=$libdir
if [ -x "$tmp/peak" ]; then
  resolved=$(ldd "$tmp/peak" | awk '/libmemsnap/{print $3}')
  [ "$resolved" = "$libdir/$soname" ] && ok "peak runs with the installed $soname" || bad "peak loads libmemsnap from '$resolved'"
fi

# A CMake project: find_package(memsnap) and the target memsnap::memsnap.
mkdir -p "$tmp/consumer"
cat > "$tmp/consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(consumer C)
find_package(memsnap $version REQUIRED)
foreach(name $(cd examples && ls *.c | sed 's/\.c$//' | tr '\n' ' '))
  add_executable(\${name} $(pwd)/examples/\${name}.c)
  target_link_libraries(\${name} PRIVATE memsnap::memsnap)
endforeach()
CMAKE
# consumer PREFIX BUILD_DIR: configures and builds every example against PREFIX and runs
# each as its pkg-config build does.
consumer() {
  local p=$1 b=$2
  if ! cmake -S "$tmp/consumer" -B "$b" -DCMAKE_PREFIX_PATH="$p" \
       -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$extra" -DCMAKE_EXE_LINKER_FLAGS="$extra" \
       > "$tmp/consumer.log" 2>&1 || ! cmake --build "$b" >> "$tmp/consumer.log" 2>&1; then
    bad "CMake consumer in $p: $(tail -c 600 "$tmp/consumer.log")"; return; fi
  for src in examples/*.c; do
    local name; name=$(basename "$src" .c)
    if [ "$(LD_LIBRARY_PATH=$libdir "$b/$name" testdata/leak_layers.pickle 2>&1)" = "$(LD_LIBRARY_PATH=$libdir "$tmp/$name" testdata/leak_layers.pickle 2>&1)" ]; then
      ok "a CMake project builds examples/$name.c with find_package(memsnap) from $p"
    else
      bad "CMake consumer: $name from $p differs"
    fi
  done
}
consumer "$prefix" "$tmp/consumer/build"

# The README's example program and what it shows it printing.
awk '/^```c$/{on=1; next} on && /^```$/{exit} on' README.md > "$tmp/readme.c"
want=$(awk '/^\$ cc peak.c/{on=1; next} on && /^```$/{exit} on' README.md)
if $cc -std=c11 -Wall -Wextra -Werror $extra "$tmp/readme.c" $(pkgc --cflags --libs) -o "$tmp/readme" 2> "$tmp/err" &&
   [ -n "$want" ] && [ "$("$tmp/readme" testdata/gpt2_train.pickle)" = "$want" ]; then
  ok "README's example builds and prints what the README shows"
else
  bad "README's example: $(head -c 300 "$tmp/err") got '$("$tmp/readme" testdata/gpt2_train.pickle 2>&1)', README shows '$want'"
fi

# The examples run on a sample of the recordings, one of each kind (plain, several
# devices, a wrapped ring buffer, an OOM, CUDA graphs, one forward, a graph leak, two
# leaks, a small leak, none): every recording's numbers are test_truth's and test_leaks'
# to check, and the examples under ASan on all 79 took minutes of CI.
PEAK_SAMPLE="gpt2_train ddp_rank1 ring_wrap oom compile_reduce_overhead shape_forward_kept seg_roundup"
LEAK_SAMPLE="leak_layers leak_eval_graph leak_after_step v3_metric_leak noleak_kv_cache seg_roundup shape_forward_kept"
truth() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
# peak: one line per device; the busiest one's peak is the allocator's peak counter
# (exact for every trace that dropped nothing; a wrapped ring buffer can only be lower).
checked=0 failed_before=$fail
for name in $PEAK_SAMPLE; do
  snap=testdata/$name.pickle
  [ -x "$tmp/peak" ] || break
  t=${snap%.pickle}.truth.json
  out=$("$tmp/peak" "$snap" 2> "$tmp/err"); rc=$?
  if [ "$rc" -ne 0 ] || ! echo "$out" | grep -qxE 'device [0-9]+ peak [0-9]+' ||
     echo "$out" | grep -vqxE 'device [0-9]+ peak [0-9]+'; then
    bad "peak $snap: rc $rc: $out $(head -c 200 "$tmp/err")"; continue; fi
  got=$(echo "$out" | awk '{print $4}' | sort -n | tail -1)
  want=$(truth "$t" "d['counters_at_end']['requested_bytes.all.peak']")
  if [ "$(truth "$t" "d.get('max_entries') is None")" = True ]; then
    [ "$got" = "$want" ] || bad "peak $snap: $got, the allocator says $want"
  else
    [ "$got" -le "$want" ] || bad "peak $snap (wrapped): $got above the allocator's $want"
  fi
  checked=$((checked+1))
done
[ "$checked" -gt 0 ] && [ "$fail" -eq "$failed_before" ] && ok "peak: $checked snapshots, every peak equals requested_bytes.all.peak"

# leaks: exactly the leaks the generator injected, exit status 1 when there is one. A
# finding is one root cause, its sites are the indented member lines under it. A truth
# leak of one allocating line (file:line function, count, bytes each) is a member line,
# whichever finding holds it. A kept autograd graph (kind "graph") has no such line: it is
# a finding of pattern graph at the user's line that called the model, one graph kept
# per iteration; its members are the model's layers, which the truth does not list.
checked=0
for name in $LEAK_SAMPLE; do
  t=testdata/$name.truth.json
  [ -x "$tmp/leaks" ] || break
  [ "$(truth "$t" "'leaks' in d")" = True ] || continue
  snap=${t%.truth.json}.pickle
  "$tmp/leaks" "$snap" > "$tmp/out" 2> "$tmp/err"; rc=$?
  # %s for the bytes: a truth leak without them that is not a graph fails as "None".
  want=$(truth "$t" "'\n'.join(sorted(('graph %s:%d %s, %d iterations' % (l['filename'], l['line'], l['name'], l['count'])) if l.get('kind') == 'graph' else ('leak %s:%d %s: %d alive, %s bytes each' % (l['filename'], l['line'], l['name'], l['count'], l['bytes_each_requested'])) for l in d['leaks']))")
  got=$(awk 'NR == 1 { iterations = $1 }
             /^[a-z]+ [a-z]+: / { pattern = $2 }
             /^leak graph: / { sub(/.*, model called at /, ""); print "graph " $0 ", " iterations " iterations" }
             /^  leak / && pattern != "graph:" { sub(/^  /, ""); sub(/, [+][0-9]+ per iteration$/, ""); print }' \
          "$tmp/out" | LC_ALL=C sort)
  want_rc=$([ -n "$want" ] && echo 1 || echo 0)
  if [ "$got" != "$want" ] || [ "$rc" -ne "$want_rc" ]; then
    bad "leaks $snap: rc $rc (want $want_rc): got '$got', want '$want'"; continue; fi
  checked=$((checked+1))
done
[ "$checked" -gt 0 ] && ok "leaks: $checked snapshots, the injected leaks exactly"

# The static library, when installed: Requires.private and Libs.private are complete.
if [ -e "$libdir/libmemsnap.a" ]; then
  if $cc -std=c11 $extra examples/peak.c $(pkgc --cflags) \
       $(pkgc --static --libs | sed "s|-lmemsnap|$libdir/libmemsnap.a|") -o "$tmp/peak_static" 2> "$tmp/err" &&
     ! ldd "$tmp/peak_static" | grep -q libmemsnap &&
     [ "$(env -u LD_LIBRARY_PATH "$tmp/peak_static" testdata/gpt2_train.pickle)" = "$("$tmp/peak" testdata/gpt2_train.pickle)" ]; then
    ok "peak linked statically with pkg-config --static"
  else
    bad "static link: $(head -c 400 "$tmp/err")"
  fi
fi

# Exports: exactly the functions declared with MS_API, nothing else of the library's.
# The headers are preprocessed with MS_API kept visible as a marker.
printf '#include <memsnap/%s>\n' $(cd "$prefix/include/memsnap" && ls *.h) > "$tmp/all.c"
$cc -E -P -DMS_API=__ms_api__ $(pkgc --cflags) "$tmp/all.c" > "$tmp/all.i" 2> "$tmp/err" || bad "preprocessing the headers: $(head -c 300 "$tmp/err")"
python3 - "$tmp/all.i" > "$tmp/declared" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
# Declarations end at ';' or open a body; a function's name is the identifier before '('.
for stmt in re.split(r"[;{}]", text):
    stmt = " ".join(stmt.split())
    if stmt.startswith("typedef"):
        continue
    m = re.search(r"\b(ms_\w+)\s*\(", stmt)
    if m and not re.search(r"\(\s*\*\s*" + m.group(1), stmt):
        print(m.group(1), "marked" if "__ms_api__" in stmt else "UNMARKED")
PY
unmarked=$(awk '$2 == "UNMARKED" {print $1}' "$tmp/declared" | tr '\n' ' ')
[ -z "$unmarked" ] && ok "every public function is declared with MS_API ($(wc -l < "$tmp/declared"))" || bad "declared without MS_API: $unmarked"
nm -D --defined-only "$libdir/$soname" | awk '{print $3}' |
  grep -vxE '_init|_fini|_edata|_end|__bss_start|(_{1,3}(asan|ubsan|lsan|odr_asan|sancov)).*' | sort -u > "$tmp/exported"
awk '{print $1}' "$tmp/declared" | sort -u > "$tmp/declared_names"
extra_syms=$(comm -23 "$tmp/exported" "$tmp/declared_names" | tr '\n' ' ')
missing_syms=$(comm -13 "$tmp/exported" "$tmp/declared_names" | tr '\n' ' ')
[ -z "$extra_syms" ] && ok "nm -D: nothing exported beyond the headers ($(wc -l < "$tmp/exported") symbols)" || bad "exported but not public: $(echo $extra_syms | cut -c1-600)"
[ -z "$missing_syms" ] && ok "nm -D: every public function exported" || bad "declared but not exported: $missing_syms"

# The tree moved elsewhere after the install (a staged package, a copied ~/.local): the
# .pc and the CMake files still find the headers and the library beside them.
moved=$tmp/moved/prefix
mkdir -p "$tmp/moved" && mv "$prefix" "$moved"
libdir=${libdir/$prefix/$moved}
export PKG_CONFIG_PATH=${PKG_CONFIG_PATH/$prefix/$moved} LD_LIBRARY_PATH=$libdir
for src in examples/*.c; do
  name=$(basename "$src" .c)
  if $cc -std=c11 -Wall -Wextra -Werror $extra "$src" $(pkgc --cflags --libs) -o "$tmp/moved/$name" 2> "$tmp/err" &&
     [ "$("$tmp/moved/$name" testdata/leak_layers.pickle 2>&1)" = "$("$tmp/$name" testdata/leak_layers.pickle 2>&1)" ]; then
    ok "examples/$name.c builds with pkg-config from the moved tree"
  else
    bad "examples/$name.c from the moved tree: $(head -c 400 "$tmp/err") $(pkgc --cflags --libs)"
  fi
done
consumer "$moved" "$tmp/consumer/build-moved"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
