package dev.ubuf.ffi;

import java.util.List;

/** Run with --illegal-native-access=deny and no --enable-native-access: prints what opening a library says. */
public final class NativeAccessDeniedMain {
    private NativeAccessDeniedMain() {
    }

    public static void main(String[] args) {
        try {
            NativeLibrary.open(List.of("libc.so.6"));
            System.out.println("OPENED");
        } catch (NativeLibraryException.AccessDenied e) {
            System.out.println("DENIED " + e.getMessage());
            System.out.println("FLAG " + e.flag());
        }
    }
}
