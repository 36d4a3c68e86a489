package dev.ubuf.cuda;

/** Stream priority: communication streams run at HIGH so their short copies and signals are not starved. */
public enum StreamPriority {
    NORMAL,
    HIGH
}
