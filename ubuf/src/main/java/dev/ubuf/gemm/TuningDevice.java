package dev.ubuf.gemm;

/**
 * What a tuned choice is valid for besides the GEMM itself: the device model and the cuBLASLt build. A choice made on
 * one is never applied to another.
 *
 * @param name              the device's name, e.g. "NVIDIA H200" (tabs and line breaks become spaces)
 * @param computeCapability major * 10 + minor, e.g. 90
 * @param cublasLtVersion   cublasLtGetVersion(), e.g. 130101
 */
record TuningDevice(String name, int computeCapability, long cublasLtVersion) {
    TuningDevice {
        name = name.replaceAll("[\\t\\r\\n]", " ").strip();
        if (name.isEmpty()) {
            throw new IllegalArgumentException("device name is empty");
        }
    }
}
