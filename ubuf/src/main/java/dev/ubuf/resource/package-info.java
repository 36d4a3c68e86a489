/**
 * Ownership of native resources: {@link dev.ubuf.resource.Closer} closes what one owner registered, once, last
 * first, with the first failure thrown and the rest suppressed.
 */
package dev.ubuf.resource;
