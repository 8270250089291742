# edgelora build. Targets: all (library + CLI), test, asan, check (test + asan), fuzz, install.
CC      ?= gcc
BUILD   ?= build
OPT     ?= -O2
SAN     ?=
CFLAGS  ?= $(OPT) -g
WARN    := -Wall -Wextra -Wshadow -Wno-unused-parameter -Wvla -Werror=implicit-function-declaration
ALLCFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) -Iinclude -Isrc -pthread $(SAN) $(CFLAGS)
LDLIBS  := -lm -pthread
PREFIX  ?= /usr/local
VERSION := $(shell sed -n 's/^#define EL_VERSION_STRING "\(.*\)"/\1/p' include/edgelora.h)

# the tools library (include/edgelora-tools.h): conversion, synthetic models, merging, file
# descriptions, measurement, training and compression, which may use OpenBLAS/LAPACKE
TOOLS_SRC := $(wildcard src/train/*.c src/compress/*.c src/convert/*.c src/vision/*.c) \
             src/formats/convert_llama2c.c src/formats/describe.c \
             src/runtime/adapter_save.c src/runtime/adapter_merge.c src/runtime/measure.c \
             src/runtime/peak.c
TOOLS_OBJ := $(TOOLS_SRC:%.c=$(BUILD)/%.o)
# the inference library (include/edgelora.h): libc, libm and pthreads only
LIB_SRC := $(filter-out $(TOOLS_SRC),$(wildcard src/core/*.c src/formats/*.c src/kernels/*.c \
                                      src/tokenizer/*.c src/model/*.c src/runtime/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
# the same objects position-independent, for the shared library (built by `make shared` and
# installed with the static one); soname libedgelora.so.MAJOR, only the el_ API exported
PIC_OBJ := $(LIB_SRC:%.c=$(BUILD)/pic/%.o)
SO_MAJOR := $(firstword $(subst ., ,$(VERSION)))
SHARED := $(BUILD)/libedgelora.so.$(VERSION)
TOOLS_LIBS := $(shell pkg-config --libs openblas lapacke libpng zlib 2>/dev/null || echo -lopenblas -llapacke -lpng -lz)
BLAS_CFLAGS := $(shell pkg-config --cflags openblas lapacke libpng zlib 2>/dev/null)
# line editing for `edgelora chat` (libedit, BSD licence): the program's alone, never a library's
EDIT_CFLAGS := $(shell pkg-config --cflags libedit 2>/dev/null)
EDIT_LIBS := $(shell pkg-config --libs libedit 2>/dev/null)
# HTTP for `edgelora serve` (libmicrohttpd, LGPL): the program's alone, never a library's
HTTPD_CFLAGS := $(shell pkg-config --cflags libmicrohttpd 2>/dev/null)
HTTPD_LIBS := $(shell pkg-config --libs libmicrohttpd 2>/dev/null)
LIBS    := $(BUILD)/libedgelora-tools.a $(BUILD)/libedgelora.a
CLI_SRC := $(wildcard cli/*.c)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TEST_UTIL := $(BUILD)/tests/testutil.o
FAULT_BIN := $(BUILD)/tests/edgelora-decode-fault

.PHONY: all test asan check fuzz fuzz-smoke install clean bench cross-arm test-arm shared
.SECONDARY:
all: $(LIBS) $(BUILD)/edgelora $(TEST_BIN) $(FAULT_BIN)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -fPIC -fno-semantic-interposition -MMD -MP -c $< -o $@

# per-ISA kernels get their instruction set by file name: an ISA's table <isa>.c and its kernel
# files <kind>_<isa>.c (docs/kernels.md), so a new kernel file needs no edit here; dispatch.c
# uses them only if the CPU has it
MACHINE := $(shell $(CC) -dumpmachine)
KERNELS := $(BUILD)/src/kernels
PIC_KERNELS := $(BUILD)/pic/src/kernels
AVX2_CFLAGS := -mavx2 -mfma -mf16c
ifneq ($(filter x86_64% i686% i386%,$(MACHINE)),)
$(KERNELS)/avx2.o $(KERNELS)/%_avx2.o $(PIC_KERNELS)/avx2.o $(PIC_KERNELS)/%_avx2.o: \
    ALLCFLAGS += $(AVX2_CFLAGS)
$(KERNELS)/avx512.o $(KERNELS)/%_avx512.o $(PIC_KERNELS)/avx512.o $(PIC_KERNELS)/%_avx512.o: \
    ALLCFLAGS += $(AVX2_CFLAGS) -mavx512f -mavx512bw -mavx512vl -mavx512vnni
endif
ifneq ($(filter aarch64%,$(MACHINE)),)
$(KERNELS)/%_dotprod.o $(PIC_KERNELS)/%_dotprod.o: ALLCFLAGS += -march=armv8.2-a+dotprod
endif

$(BUILD)/libedgelora.a: $(LIB_OBJ)
	@mkdir -p $(dir $@) && rm -f $@
	ar rcs $@ $^

shared: $(SHARED)
# what the shared library exports: the functions the public headers declare (edgelora-tools.h's
# that live in this library, the JSON reader and el_output, among them); the rest stays internal
$(BUILD)/edgelora.map: include/edgelora.h include/edgelora-tools.h
	@mkdir -p $(dir $@)
	{ echo '{ global:'; sed -n 's/^[A-Za-z][A-Za-z0-9_ ]* \**\(el_[a-z0-9_]*\)(.*/    \1;/p' $^; \
	  echo 'local: *; };'; } > $@
$(SHARED): $(PIC_OBJ) $(BUILD)/edgelora.map
	$(CC) $(ALLCFLAGS) -shared -Wl,-soname,libedgelora.so.$(SO_MAJOR) \
	    -Wl,--version-script=$(BUILD)/edgelora.map -o $@ $(PIC_OBJ) $(LDLIBS) -lm -pthread

$(TOOLS_OBJ): ALLCFLAGS += $(BLAS_CFLAGS)

$(BUILD)/libedgelora-tools.a: $(TOOLS_OBJ)
	@mkdir -p $(dir $@) && rm -f $@
	ar rcs $@ $^

# the program sees only the public headers (include/), as any other user of the libraries
$(CLI_OBJ): ALLCFLAGS := $(filter-out -Isrc,$(ALLCFLAGS))
$(BUILD)/cli/line_input.o: ALLCFLAGS += $(EDIT_CFLAGS)
ifeq ($(EDIT_LIBS),)
$(BUILD)/cli/line_input.o:
	@echo "libedit (line editing for edgelora chat) is not installed: scripts/setup.sh installs it (Debian: libedit-dev)" >&2; exit 1
endif

$(BUILD)/cli/serve_http.o: ALLCFLAGS += $(HTTPD_CFLAGS)
ifeq ($(HTTPD_LIBS),)
$(BUILD)/cli/serve_http.o:
	@echo "libmicrohttpd (HTTP for edgelora serve) is not installed: scripts/setup.sh installs it (Debian: libmicrohttpd-dev)" >&2; exit 1
endif

$(BUILD)/edgelora: $(CLI_OBJ) $(LIBS)
	$(CC) $(ALLCFLAGS) -o $@ $^ $(TOOLS_LIBS) $(EDIT_LIBS) $(HTTPD_LIBS) $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(TEST_UTIL) $(LIBS)
	$(CC) $(ALLCFLAGS) -o $@ $^ $(TOOLS_LIBS) $(LDLIBS)
# the scores of `edgelora eval` live in the CLI; their test links them in
$(BUILD)/tests/test_eval_metrics: $(BUILD)/cli/eval_metrics.o
# so do the prefix cache of `edgelora serve` and its test
$(BUILD)/tests/test_serve_cache: $(BUILD)/cli/serve_cache.o
# the program with an el_decode that fails on request (tests/fault_decode.c), for the tests alone
$(FAULT_BIN): $(CLI_OBJ) $(BUILD)/tests/fault_decode.o $(LIBS)
	$(CC) $(ALLCFLAGS) -Wl,--wrap=el_decode -o $@ $^ $(TOOLS_LIBS) $(EDIT_LIBS) $(HTTPD_LIBS) $(LDLIBS)

# kernel timings (not tests): build/bench/bench_kernels
BENCH_BIN := $(patsubst %.c,$(BUILD)/%,$(wildcard bench/*.c))
bench: $(BENCH_BIN)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(LIBS)
	$(CC) $(ALLCFLAGS) -o $@ $^ $(TOOLS_LIBS) $(LDLIBS)

test: all
	BUILD=$(BUILD) EL_SUMMARY=$(EL_SUMMARY) tests/run.sh

asan:
	$(MAKE) BUILD=build-asan OPT=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" test

# everything CI runs; the last line adds up the counts of every run
SUMMARY := $(CURDIR)/build/check-summary
check:
	@mkdir -p build && rm -f $(SUMMARY)
	$(MAKE) test EL_SUMMARY=$(SUMMARY)
	$(MAKE) asan EL_SUMMARY=$(SUMMARY)
	$(MAKE) fuzz-smoke
	$(MAKE) test-arm EL_SUMMARY=$(SUMMARY)
	@awk '{ p += $$1; f += $$2; s += $$3 } END { printf "check: %d passed, %d failed, %d skipped\n", p, f, s }' $(SUMMARY)

fuzz-smoke:
	$(MAKE) -f tests/fuzz/Makefile smoke

# aarch64 cross build of the library and the kernel tests, static so qemu-aarch64 runs them
# without a sysroot; test-arm runs them on qemu's default CPU (with the dot product extension)
# and on a Cortex-A53 (without it), so both NEON paths are exercised.
ARM_CC ?= aarch64-linux-gnu-gcc
ARM_BUILD ?= build-arm
ARM_TESTS := $(patsubst tests/%.c,$(ARM_BUILD)/tests/%,$(wildcard tests/test_kernels*.c) \
                                                    tests/test_types.c)

# (the kernel tests need only the inference library: no tools library, no BLAS)
cross-arm:
	$(MAKE) BUILD=$(ARM_BUILD) CC=$(ARM_CC) CFLAGS="$(OPT) -g -static" \
	    LIBS=$(ARM_BUILD)/libedgelora.a TOOLS_LIBS= $(ARM_TESTS)

# without the cross compiler or qemu (not a CI machine) this says so and passes
test-arm:
	@if ! command -v $(ARM_CC) >/dev/null || ! command -v qemu-aarch64 >/dev/null; then \
	    echo "SKIP test-arm: needs $(ARM_CC) and qemu-aarch64"; exit 0; fi; \
	$(MAKE) cross-arm && \
	for cpu in max cortex-a53; do \
	    QEMU_CPU=$$cpu RUN_WITH=qemu-aarch64 PROGRAMS="$(ARM_TESTS)" EL_SUMMARY=$(EL_SUMMARY) \
	        tests/run.sh || exit 1; done

fuzz:
	$(MAKE) -f tests/fuzz/Makefile

install: all $(SHARED)
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/bin \
	           $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 $(LIBS) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(SHARED) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libedgelora.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libedgelora.so.$(SO_MAJOR)
	ln -sf libedgelora.so.$(SO_MAJOR) $(DESTDIR)$(PREFIX)/lib/libedgelora.so
	install -m 644 include/edgelora.h include/edgelora-tools.h $(DESTDIR)$(PREFIX)/include/
	install -m 755 $(BUILD)/edgelora $(DESTDIR)$(PREFIX)/bin/
	install -d $(DESTDIR)$(PREFIX)/share/edgelora/models
	for f in models/*.gguf; do [ ! -f "$$f" ] || install -m 644 "$$f" $(DESTDIR)$(PREFIX)/share/edgelora/models/; done
	for pc in edgelora edgelora-tools; do \
	    sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' -e 's|@TOOLS_LIBS@|$(TOOLS_LIBS)|' \
	        -e 's|@BLAS_CFLAGS@|$(BLAS_CFLAGS)|' $$pc.pc.in \
	        > $(DESTDIR)$(PREFIX)/lib/pkgconfig/$$pc.pc; done

clean:
	rm -rf build build-asan build-arm

-include $(PIC_OBJ:.o=.d) $(LIB_OBJ:.o=.d) $(TOOLS_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_BIN:=.d) $(BUILD)/tests/fault_decode.d
