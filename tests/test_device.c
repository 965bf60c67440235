static char help[] = "Device selection (rank -> GPU) and what -ksp_view, -vec_view and -mat_view (ascii info) say about it.\n\
Initializes the package, checks FusedKSPGetDevice() against the backend (-1 on the host backend, the\n\
-fused_device_id given on the CUDA backend), solves a small system with fusedcg and fused types, and views the\n\
KSP, the vector and the matrix: each view names the backend once, and the note \"no GPU found: host backend\" is\n\
said at most once per view (on the host backend chosen for want of a GPU it must be said).  The views are echoed.\n\
Prints one PASS/FAIL line per check and 'test_device: PASS' or 'test_device: FAIL' (exit code 1).\n\
Options:\n\
  -auto_backend: remove -fused_backend from the options before FusedKSPInitializePackage() (the automatic choice)\n\
  -expect_error: FusedKSPInitializePackage() must fail with PETSC_ERR_ARG_OUTOFRANGE (e.g. -fused_device_id 99);\n\
                 prints 'test_device: expected error: MESSAGE' and stops there\n\
  -expect_error_code <n>: the error code -expect_error expects instead (e.g. 57, PETSC_ERR_SUP_SYS: -fused_backend\n\
                 kokkos with a library built without Kokkos)\n\
  -n <10>: size of the system\n\n";

#include <fusedksp.h>
#include <string.h>
#include "check.h"

/* Everything PETSc prints through PetscVFPrintf() (the ASCII viewers on stdout), also kept here */
static char   captured[16384];
static size_t captured_len = 0;
static PetscErrorCode (*printer)(FILE *, const char[], va_list); /* PETSc's PetscVFPrintf() */

static PetscErrorCode CapturingVFPrintf(FILE *fd, const char format[], va_list argp)
{
  va_list copy;
  size_t  len;

  PetscFunctionBegin;
  if (captured_len + 1 < sizeof(captured)) {
    va_copy(copy, argp);
    PetscCall(PetscVSNPrintf(captured + captured_len, sizeof(captured) - captured_len, format, &len, copy));
    va_end(copy);
    captured_len += strlen(captured + captured_len);
  }
  PetscCall(printer(fd, format, argp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* how often `what` occurs in `text` */
static PetscInt Occurrences(const char *text, const char *what)
{
  PetscInt n = 0;

  for (const char *s = strstr(text, what); s; s = strstr(s + 1, what)) n++;
  return n;
}

/* Views an object on stdout (rank 0 prints) and returns, on every rank, what rank 0 printed */
static PetscErrorCode ViewCaptured(PetscObject obj, PetscViewerFormat format, char text[], size_t len)
{
  PetscViewer viewer = PETSC_VIEWER_STDOUT_(PetscObjectComm(obj));

  PetscFunctionBeginUser;
  captured_len  = 0;
  captured[0]   = 0;
  printer       = PetscVFPrintf;
  PetscVFPrintf = CapturingVFPrintf;
  PetscCall(PetscViewerPushFormat(viewer, format));
  PetscCall(PetscObjectView(obj, viewer));
  PetscCall(PetscViewerPopFormat(viewer));
  PetscVFPrintf = printer;
  PetscCall(PetscStrncpy(text, captured, len));
  PetscCallMPI(MPI_Bcast(text, (PetscMPIInt)len, MPI_CHAR, 0, PetscObjectComm(obj)));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  Mat            A;
  Vec            x, b;
  KSP            ksp;
  PetscInt       n = 10, rs, re, device, requested = -1;
  PetscBool      auto_backend = PETSC_FALSE, expect_error = PETSC_FALSE, requested_set, host, kokkos;
  PetscInt       expect_code = PETSC_ERR_ARG_OUTOFRANGE;
  const char    *backend;
  char           kview[sizeof(captured)], vview[sizeof(captured)], mview[sizeof(captured)];
  PetscErrorCode ierr;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-auto_backend", &auto_backend, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-expect_error", &expect_error, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-expect_error_code", &expect_code, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  if (auto_backend) PetscCall(PetscOptionsClearValue(NULL, "-fused_backend"));
  if (expect_error) {
    const char *text, *specific = NULL;

    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    ierr = FusedKSPInitializePackage();
    PetscCall(PetscPopErrorHandler());
    PetscCall(Check(ierr == (PetscErrorCode)expect_code ? PETSC_TRUE : PETSC_FALSE, "FusedKSPInitializePackage() fails with error %d (got error %d)", (int)expect_code, (int)ierr));
    if (ierr) {
      PetscCall(PetscErrorMessage(ierr, &text, &specific));
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_device: expected error: %s\n", specific ? specific : ""));
    }
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_device: %s\n", check_failures ? "FAIL" : "PASS"));
    PetscCall(PetscFinalize());
    return check_failures ? 1 : 0;
  }
  PetscCall(FusedKSPInitializePackage());
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-fused_device_id", &requested, &requested_set));

  PetscCall(FusedKSPGetBackendName(&backend));
  PetscCall(PetscStrcmp(backend, "host", &host));
  PetscCall(PetscStrcmp(backend, "kokkos", &kokkos));
  PetscCall(FusedKSPGetDevice(&device));
  if (host || kokkos) /* kokkos built for CUDA: a device, which its views name (below) */
    PetscCall(Check(device == -1 || (kokkos && device >= 0) ? PETSC_TRUE : PETSC_FALSE, "%s backend: FusedKSPGetDevice() gives -1 (got %" PetscInt_FMT ")", backend, device));
  else if (requested_set && requested >= 0)
    PetscCall(Check(device == requested ? PETSC_TRUE : PETSC_FALSE, "%s backend: FusedKSPGetDevice() gives -fused_device_id %" PetscInt_FMT " (got %" PetscInt_FMT ")", backend, requested, device));
  else
    PetscCall(Check(device >= 0 ? PETSC_TRUE : PETSC_FALSE, "%s backend: FusedKSPGetDevice() gives a device id (got %" PetscInt_FMT ")", backend, device));

  /* tridiag(-1, 2, -1), solved with fusedcg */
  PetscCall(MatCreate(PETSC_COMM_WORLD, &A));
  PetscCall(MatSetSizes(A, PETSC_DECIDE, PETSC_DECIDE, n, n));
  PetscCall(MatSetType(A, MATAIJFUSED));
  PetscCall(MatSeqAIJSetPreallocation(A, 3, NULL));
  PetscCall(MatMPIAIJSetPreallocation(A, 3, NULL, 1, NULL));
  PetscCall(MatGetOwnershipRange(A, &rs, &re));
  for (PetscInt r = rs; r < re; ++r) {
    PetscCall(MatSetValue(A, r, r, 2.0, INSERT_VALUES));
    if (r > 0) PetscCall(MatSetValue(A, r, r - 1, -1.0, INSERT_VALUES));
    if (r < n - 1) PetscCall(MatSetValue(A, r, r + 1, -1.0, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatCreateVecs(A, &x, &b));
  PetscCall(VecSet(b, 1.0));
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPFUSEDCG));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSolve(ksp, b, x));

  PetscCall(ViewCaptured((PetscObject)ksp, PETSC_VIEWER_DEFAULT, kview, sizeof(kview)));
  PetscCall(ViewCaptured((PetscObject)x, PETSC_VIEWER_ASCII_INFO, vview, sizeof(vview)));
  PetscCall(ViewCaptured((PetscObject)A, PETSC_VIEWER_ASCII_INFO, mview, sizeof(mview)));
  PetscCall(Check(Occurrences(kview, "FusedKSP backend: ") == 1 ? PETSC_TRUE : PETSC_FALSE, "-ksp_view names the backend once"));
  PetscCall(Check(Occurrences(vview, "FusedKSP vector, backend: ") == 1 ? PETSC_TRUE : PETSC_FALSE, "-vec_view ::ascii_info names the backend once"));
  PetscCall(Check(Occurrences(mview, "FusedKSP matrix, backend: ") == 1 ? PETSC_TRUE : PETSC_FALSE, "-mat_view ::ascii_info names the backend once"));
  PetscCall(Check(Occurrences(kview, "no GPU found") <= 1 && Occurrences(vview, "no GPU found") <= 1 ? PETSC_TRUE : PETSC_FALSE, "'no GPU found' is said at most once per view"));
  if (host && auto_backend) {
    PetscCall(Check(Occurrences(kview, "FusedKSP backend: no GPU found: host backend") == 1 ? PETSC_TRUE : PETSC_FALSE, "automatic choice, no GPU: -ksp_view says 'no GPU found: host backend'"));
    PetscCall(Check(Occurrences(vview, "FusedKSP vector, backend: no GPU found: host backend") == 1 ? PETSC_TRUE : PETSC_FALSE, "automatic choice, no GPU: -vec_view says 'no GPU found: host backend'"));
  } else if (host) {
    PetscCall(Check(Occurrences(kview, "FusedKSP backend: host (-fused_backend host)") == 1 ? PETSC_TRUE : PETSC_FALSE, "-fused_backend host: -ksp_view says so"));
  } else if (kokkos && auto_backend) {
    PetscCall(Check(Occurrences(kview, "FusedKSP backend: no GPU found: kokkos, ") == 1 ? PETSC_TRUE : PETSC_FALSE, "automatic choice, no GPU: -ksp_view says 'no GPU found: kokkos, ...'"));
    PetscCall(Check(Occurrences(vview, "FusedKSP vector, backend: no GPU found: kokkos, ") == 1 ? PETSC_TRUE : PETSC_FALSE, "automatic choice, no GPU: -vec_view says 'no GPU found: kokkos, ...'"));
  } else if (kokkos) {
    char line[64];

    PetscCall(Check(Occurrences(kview, "FusedKSP backend: kokkos, ") == 1 ? PETSC_TRUE : PETSC_FALSE, "-fused_backend kokkos: -ksp_view says so"));
    PetscCall(PetscSNPrintf(line, sizeof(line), "FusedKSP backend: kokkos, Cuda, device %" PetscInt_FMT " (", device));
    PetscCall(Check((device >= 0) == (Occurrences(kview, line) == 1) ? PETSC_TRUE : PETSC_FALSE, "kokkos backend: -ksp_view names device %" PetscInt_FMT " exactly when FusedKSPGetDevice() gives it", device));
  } else {
    char     line[64];
    PetscInt device0 = device; /* the views are printed by rank 0: they name its device */

    PetscCallMPI(MPI_Bcast(&device0, 1, MPIU_INT, 0, PETSC_COMM_WORLD));
    PetscCall(PetscSNPrintf(line, sizeof(line), "FusedKSP backend: %s, device %" PetscInt_FMT " (", backend, device0));
    PetscCall(Check(Occurrences(kview, line) == 1 ? PETSC_TRUE : PETSC_FALSE, "-ksp_view names the device: %s...", line));
    PetscCall(PetscSNPrintf(line, sizeof(line), "FusedKSP vector, backend: %s, device %" PetscInt_FMT " (", backend, device0));
    PetscCall(Check(Occurrences(vview, line) == 1 ? PETSC_TRUE : PETSC_FALSE, "-vec_view names the device: %s...", line));
    PetscCall(PetscSNPrintf(line, sizeof(line), "FusedKSP matrix, backend: %s, device %" PetscInt_FMT " (", backend, device0));
    PetscCall(Check(Occurrences(mview, line) == 1 ? PETSC_TRUE : PETSC_FALSE, "-mat_view names the device: %s...", line));
  }

  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_device: %s\n", check_failures ? "FAIL" : "PASS"));
  PetscCall(PetscFinalize());
  return check_failures ? 1 : 0;
}
