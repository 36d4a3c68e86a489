#!/usr/bin/env bash
# Java on a GPU node, from the bundle (.gpu/java.sh): unpacks the bundle's jre.txz into jre/ beside it the first
# time (and again when jre.txz is newer), then runs that java with native access on and NVLink multicast off.
# Usage: .gpu/java.sh [java arguments...]
set -euo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Multicast (NVLS) can take a shared host's GPUs out of service: off for ubuf, NCCL, PyTorch and NVSHMEM, in this
# process and every process it starts.
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
runtime="$bundle/jre"
if [ ! -x "$runtime/bin/java" ] || [ "$bundle/jre.txz" -nt "$runtime/.unpacked" ]; then
  [ -s "$bundle/jre.txz" ] || { echo "java.sh: no $bundle/jre.txz: build the bundle with scripts/gpu-bundle.sh" >&2; exit 1; }
  rm -rf "$runtime" "$runtime.partial"
  mkdir -p "$runtime.partial"
  tar xJf "$bundle/jre.txz" -C "$runtime.partial"
  mv "$runtime.partial/jre" "$runtime"   # whole or not at all: an interrupted unpack is redone next time
  rmdir "$runtime.partial"
  touch "$runtime/.unpacked"
fi
exec "$runtime/bin/java" --enable-native-access=ALL-UNNAMED "$@"
