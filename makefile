# FusedKSP makefile (PETSc style: reads $PETSC_DIR/lib/petsc/conf/variables)
#
#   make                 lib/libfusedksp.so, the tutorials and the tests
#   make test            every test on the host backend (serial and mpiexec -n 2/3); ends with "N passed, N failed, N skipped"
#   make test-gpu        the same plus the device-only tests (needs a GPU)
#   make demo            fused vs classical solvers on tutorials/ex1, one table
#   make conformance     PETSc's own test programs as shipped and with the plugin loaded (conformance/README.md;
#                        CONFORMANCE_ARGS= passes options/patterns, e.g. CONFORMANCE_ARGS="--jobs 1 mat/tests")
#   make conformance-ci  the same on the subset conformance/ci-subset (about 5 minutes; also run by make test)
#   make install PREFIX=/path
#   make info            PETSc, MPI, compilers, whether the CUDA backend is built
#   make clean
#
# PETSc comes from config/local.mk (written by config/configure; FUSEDKSP_CONFIG= to read another)
# unless PETSC_DIR is set.  FK_BUILD= and FK_LIBDIR= place a second build (e.g. for the GPU machine).
# CUDA backend: built when nvcc is found (NVCC=, CUDA_ARCH=90 by default; NVCC= to disable).
# Kokkos backend: built when KOKKOS_DIR names an installed Kokkos (config/kokkos writes it to config/local.mk;
# KOKKOS_DIR= to disable): with g++ -fopenmp for a host build of Kokkos, with Kokkos's nvcc_wrapper for a CUDA build
# (FUSEDKSP_KOKKOS_CUDA=1 config/kokkos; needs nvcc).

FUSEDKSP_CONFIG ?= config/local.mk
-include $(FUSEDKSP_CONFIG)
ifeq ($(strip $(PETSC_DIR)),)
$(error PETSc not found: run config/configure first, or set PETSC_DIR (and PETSC_ARCH))
endif
# The PETSc builds FusedKSP supports: real double-precision scalars and 32-bit indices (the kernels and the CUDA
# backend are written for them); any other build is refused here, before anything is compiled
FK_PETSCCONF := $(firstword $(wildcard $(PETSC_DIR)/$(PETSC_ARCH)/include/petscconf.h $(PETSC_DIR)/include/petscconf.h))
FK_UNSUPPORTED := $(strip \
  $(if $(shell grep -s '^\#define PETSC_USE_64BIT_INDICES ' $(FK_PETSCCONF)),64-bit indices (--with-64-bit-indices);) \
  $(if $(shell grep -s '^\#define PETSC_USE_COMPLEX ' $(FK_PETSCCONF)),complex scalars (--with-scalar-type=complex);) \
  $(if $(shell grep -s '^\#define PETSC_USE_REAL_DOUBLE ' $(FK_PETSCCONF)),,a precision other than double (--with-precision);))
ifneq ($(FK_PETSCCONF),)
ifneq ($(FK_UNSUPPORTED),)
ifeq ($(filter clean,$(MAKECMDGOALS)),)
$(error FusedKSP supports PETSc builds with real double-precision scalars and 32-bit indices; the PETSc in $(PETSC_DIR) $(PETSC_ARCH) has $(FK_UNSUPPORTED) configure PETSc without these options (config/configure builds a supported one), or set PETSC_DIR/PETSC_ARCH to another build)
endif
endif
endif
include $(PETSC_DIR)/lib/petsc/conf/variables
# the mpiexec of PETSc's MPI (Debian's /usr/bin/mpiexec follows alternatives, which may name another MPI)
FK_MPIEXEC := $(or $(if $(findstring mpich,$(CC)),$(shell command -v mpiexec.mpich)),$(if $(findstring openmpi,$(CC)),$(shell command -v mpiexec.openmpi)),$(MPIEXEC))

PREFIX    ?= /usr/local
NVCC      ?= $(shell command -v nvcc 2> /dev/null)
CUDA_ARCH ?= 90
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))

FK_BUILD   ?= build
FK_LIBDIR  ?= lib
FK_LIB     := $(FK_LIBDIR)/libfusedksp.so
KOKKOS_DIR ?=
FK_KOKKOSLIBDIR := $(if $(KOKKOS_DIR),$(firstword $(wildcard $(KOKKOS_DIR)/lib $(KOKKOS_DIR)/lib64)))
# a CUDA build of Kokkos: its sources compile with its nvcc_wrapper and the CUDA flags its CMake targets require
FK_KOKKOSCUDA := $(if $(KOKKOS_DIR),$(shell grep -s '^\#define KOKKOS_ENABLE_CUDA *$$' $(KOKKOS_DIR)/include/KokkosCore_config.h))
FK_KOKKOSCUDAFLAGS := $(if $(FK_KOKKOSCUDA),$(subst ;, ,$(shell sed -n 's/.*INTERFACE_COMPILE_OPTIONS.*COMPILE_LANGUAGE:CXX>:\(-[^>]*\)>.*/\1/p' $(FK_KOKKOSLIBDIR)/cmake/Kokkos/KokkosTargets.cmake)))
ifneq ($(FK_KOKKOSCUDA),)
ifeq ($(strip $(NVCC)),)
$(error KOKKOS_DIR=$(KOKKOS_DIR) is a CUDA build of Kokkos: the kokkos backend then needs nvcc (NVCC=, or nvcc in PATH))
endif
ifeq ($(FK_KOKKOSCUDAFLAGS),)
$(error KOKKOS_DIR=$(KOKKOS_DIR) is a CUDA build of Kokkos, but its CUDA flags were not found in $(FK_KOKKOSLIBDIR)/cmake/Kokkos/KokkosTargets.cmake)
endif
endif
FK_KOKKOSSRC := $(if $(KOKKOS_DIR),$(sort $(wildcard src/backend/kokkos/*.cxx)))
FK_CXXSRC  := $(sort $(filter-out src/backend/kokkos/%,$(wildcard src/*/*.cxx src/*/*/*.cxx)) $(FK_KOKKOSSRC))
FK_CSRC    := $(wildcard plugins/*.c)
FK_CUSRC   := $(if $(NVCC),$(sort $(wildcard src/backend/cuda/*.cu)))
FK_OBJ     := $(patsubst %,$(FK_BUILD)/%.o,$(FK_CXXSRC) $(FK_CSRC) $(FK_CUSRC))
FK_DEFS    := $(if $(NVCC),-DFUSEDKSP_HAVE_CUDA) $(if $(KOKKOS_DIR),-DFUSEDKSP_HAVE_KOKKOS)
FK_INC     := -Iinclude -Isrc -Itutorials $(PETSC_CC_INCLUDES)
FK_MPIINC  := $(filter -I%,$(shell $(CC) -show 2> /dev/null || $(CC) --showme:compile 2> /dev/null))
comma      := ,
FK_CUDALIB := $(if $(NVCC),-L$(CUDA_HOME)/lib64 -Wl$(comma)-rpath$(comma)$(CUDA_HOME)/lib64 -lcusparse -lcudart)
FK_KOKKOSLIB := $(if $(KOKKOS_DIR),-L$(FK_KOKKOSLIBDIR) -Wl$(comma)-rpath$(comma)$(FK_KOKKOSLIBDIR) -lkokkoscore $(if $(FK_KOKKOSCUDA),,-fopenmp) -ldl)
FK_KOKKOSCXX := $(if $(FK_KOKKOSCUDA),CUDA_ROOT=$(CUDA_HOME) $(KOKKOS_DIR)/bin/nvcc_wrapper,$(CXX))
FK_KOKKOSFLAGS := -O3 $(if $(FK_KOKKOSCUDA),$(FK_KOKKOSCUDAFLAGS) $(FK_MPIINC),-fopenmp) -isystem $(KOKKOS_DIR)/include
FK_RPATH   := -Wl,-rpath,$(abspath $(FK_LIBDIR)) -Wl,-rpath,$(PETSC_DIR)/$(PETSC_ARCH)/lib
FK_CFLAGS  := -O2 -g -fPIC -Wall -Wno-unknown-pragmas $(FK_DEFS) $(FK_INC)
# nvcc takes one -O: the kokkos objects' -O3 only
FK_KOKKOSCFLAGS := $(if $(FK_KOKKOSCUDA),$(filter-out -O2,$(FK_CFLAGS)),$(FK_CFLAGS))
FK_NVFLAGS := -O3 -lineinfo -std=c++17 -Xcompiler -fPIC,-Wall -gencode arch=compute_$(CUDA_ARCH),code=sm_$(CUDA_ARCH) \
              -gencode arch=compute_$(CUDA_ARCH),code=compute_$(CUDA_ARCH) $(FK_DEFS) $(FK_INC) $(FK_MPIINC)

FK_TUTORIALS := $(patsubst tutorials/%.c,$(FK_BUILD)/bin/%,$(filter-out tutorials/problems.c,$(wildcard tutorials/*.c)))
FK_TESTS     := $(patsubst tests/%.c,$(FK_BUILD)/bin/%,$(wildcard tests/*.c)) $(patsubst tests/%.cxx,$(FK_BUILD)/bin/%,$(wildcard tests/*.cxx))
FK_PROBLEMS  := $(FK_BUILD)/tutorials/problems.c.o

.PHONY: all lib tutorials tests test test-gpu demo install info clean format conformance conformance-ci
.SECONDARY: # keep the objects of the test programs and tutorials (intermediate files otherwise), so make relinks nothing needlessly
all: lib tutorials tests
lib: $(FK_LIB)
tutorials: $(FK_TUTORIALS)
tests: $(FK_TESTS)

# The C and C++ objects depend on the backends built (FK_DEFS, and whether Kokkos is a CUDA build): a stamp that
# changes with them rebuilds the objects when a build without nvcc follows one with it, or the other way round
FK_DEFS_STAMP := $(FK_BUILD)/.defs
FK_STAMPED := $(FK_DEFS)$(if $(FK_KOKKOSCUDA), kokkos-cuda)
$(shell mkdir -p $(FK_BUILD) && (echo '$(FK_STAMPED)' | cmp -s - $(FK_DEFS_STAMP) || echo '$(FK_STAMPED)' > $(FK_DEFS_STAMP)))

$(FK_BUILD)/%.cxx.o: %.cxx $(wildcard include/*.h src/*/*.h src/*/*.hpp src/*/*/*.hpp) $(FK_DEFS_STAMP)
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 $(FK_CFLAGS) -c $< -o $@
$(FK_BUILD)/src/backend/kokkos/%.cxx.o: src/backend/kokkos/%.cxx $(wildcard include/*.h src/*/*.hpp src/*/*/*.hpp) $(FK_DEFS_STAMP)
	@mkdir -p $(dir $@)
	$(FK_KOKKOSCXX) -std=c++17 $(FK_KOKKOSCFLAGS) $(FK_KOKKOSFLAGS) -c $< -o $@
$(FK_BUILD)/%.c.o: %.c $(wildcard include/*.h tutorials/*.h tests/*.h) $(FK_DEFS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(FK_CFLAGS) -c $< -o $@
$(FK_BUILD)/%.cu.o: %.cu $(wildcard include/*.h src/*/*.hpp src/*/*/*.hpp src/backend/cuda/*.cuh)
	@mkdir -p $(dir $@)
	$(NVCC) $(FK_NVFLAGS) -c $< -o $@

$(FK_LIB): $(FK_OBJ)
	@mkdir -p $(FK_LIBDIR)
	$(CXX) -shared -o $@ $^ $(FK_CUDALIB) $(FK_KOKKOSLIB) $(FK_RPATH) $(PETSC_KSP_LIB)

$(FK_BUILD)/bin/%: $(FK_BUILD)/tutorials/%.c.o $(FK_PROBLEMS) $(FK_LIB)
	@mkdir -p $(dir $@)
	$(CLINKER) -o $@ $< $(FK_PROBLEMS) -L$(FK_LIBDIR) -lfusedksp $(FK_RPATH) $(PETSC_KSP_LIB)
$(FK_BUILD)/bin/%: $(FK_BUILD)/tests/%.c.o $(FK_PROBLEMS) $(FK_LIB)
	@mkdir -p $(dir $@)
	$(CLINKER) -o $@ $< $(FK_PROBLEMS) -L$(FK_LIBDIR) -lfusedksp $(FK_RPATH) $(PETSC_KSP_LIB)
$(FK_BUILD)/bin/%: $(FK_BUILD)/tests/%.cxx.o $(FK_LIB)
	@mkdir -p $(dir $@)
	$(CXX) -o $@ $< -L$(FK_LIBDIR) -lfusedksp $(FK_RPATH) $(PETSC_KSP_LIB)

test: all
	@MPIEXEC="$(FK_MPIEXEC)" PETSC_DIR="$(PETSC_DIR)" PETSC_ARCH="$(PETSC_ARCH)" PETSC_SRC="$(PETSC_SRC)" tests/run
test-gpu: all
	@MPIEXEC="$(FK_MPIEXEC)" PETSC_DIR="$(PETSC_DIR)" PETSC_ARCH="$(PETSC_ARCH)" PETSC_SRC="$(PETSC_SRC)" tests/run --gpu
sanitize: all
	@FK_BUILD="$(FK_BUILD)" tests/sanitize $(SANITIZE_ARGS)
demo: all
	@MPIEXEC="$(FK_MPIEXEC)" tutorials/demo
FK_CONFENV = MPIEXEC="$(FK_MPIEXEC)" PETSC_DIR="$(PETSC_DIR)" PETSC_ARCH="$(PETSC_ARCH)" PETSC_SRC="$(PETSC_SRC)" FK_BUILD="$(FK_BUILD)" FK_LIBDIR="$(FK_LIBDIR)"
conformance: lib
	@$(FK_CONFENV) conformance/run $(CONFORMANCE_ARGS)
conformance-ci: lib
	@$(FK_CONFENV) conformance/run --subset conformance/ci-subset --out $(FK_BUILD)/conformance-ci $(CONFORMANCE_ARGS)

install: all
	install -d $(PREFIX)/lib $(PREFIX)/include
	install -m 644 $(FK_LIB) $(PREFIX)/lib/
	install -m 644 include/fusedksp.h $(PREFIX)/include/

info:
	@echo "PETSC_DIR   = $(PETSC_DIR)"
	@echo "PETSC_ARCH  = $(PETSC_ARCH)"
	@echo "PETSc       = $$(grep -h '^#define PETSC_VERSION_\(MAJOR\|MINOR\|SUBMINOR\)' $(PETSC_DIR)/$(PETSC_ARCH)/include/petscversion.h | awk '{printf "%s.", $$3}' | sed 's/\.$$//')"
	@echo "MPI         = $$($(CC) -show 2> /dev/null | head -c 200 || true) (mpiexec: $(FK_MPIEXEC))"
	@echo "CC / CXX    = $(CC) / $(CXX)"
	@echo "CUDA        = $(if $(NVCC),built: $(NVCC) (sm_$(CUDA_ARCH) + PTX),not built (no nvcc): host backend only)"
	@echo "Kokkos      = $(if $(KOKKOS_DIR),built: $(KOKKOS_DIR) ($(if $(FK_KOKKOSCUDA),CUDA: $(FK_KOKKOSCUDAFLAGS),host threads)),not built (no KOKKOS_DIR; config/kokkos builds one))"

format:
	clang-format -i $(FK_CXXSRC) $(FK_CSRC) $(FK_CUSRC) $(wildcard include/*.h src/*/*.hpp src/*/*/*.hpp src/backend/cuda/*.cuh tutorials/*.c tutorials/*.h tests/*.c tests/*.h)

clean:
	rm -rf $(FK_BUILD) lib
