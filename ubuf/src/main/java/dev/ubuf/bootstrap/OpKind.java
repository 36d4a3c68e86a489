package dev.ubuf.bootstrap;

/** What a bootstrap operation is; carried in every contribution so mismatched collectives are caught. */
enum OpKind {
    CONNECT("connect"),
    SUBGROUP("subgroup creation"),
    ALL_GATHER("allGather"),
    BROADCAST("broadcast"),
    BARRIER("barrier");

    private final String label;

    OpKind(String label) {
        this.label = label;
    }

    String label() {
        return label;
    }
}
