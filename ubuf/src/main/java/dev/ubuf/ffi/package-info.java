/**
 * The java.lang.foreign plumbing every binding shares ({@link dev.ubuf.ffi.NativeLibrary}): opening a library from
 * candidate names, binding functions (with versioned-name fallbacks and optional symbols), unchecked downcall failures
 * and the exact {@code --enable-native-access} flag when native access is denied.
 */
package dev.ubuf.ffi;
