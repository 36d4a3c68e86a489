package dev.ubuf.plan;

/** What a plan stream is for: COMM streams carry copies and signals at high priority, COMPUTE streams GEMMs. */
public enum StreamRole {
    COMPUTE,
    COMM
}
