package dev.ubuf.layers.config;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

import java.io.IOException;
import java.io.Reader;
import java.io.StringReader;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A configuration document as a tree whose every key and value knows where it was written. Files are read with
 * Jackson's streaming parser (YAML or JSON), so positions are the parser's token locations; a {@code Map} becomes
 * the same tree with positionless origins. Only the structure is checked here; {@link UbConfigReader} reads it into
 * a {@link UbConfig.Builder}.
 */
final class ConfigTree {
    private ConfigTree() {
    }

    sealed interface Node permits Scalar, Mapping, Sequence {
        ConfigOrigin origin();
    }

    /** A scalar: Boolean, Long, BigInteger, Double, String, or null. */
    record Scalar(Object value, ConfigOrigin origin) implements Node {
    }

    record Field(String key, ConfigOrigin keyOrigin, Node value) {
    }

    record Mapping(Map<String, Field> fields, ConfigOrigin origin) implements Node {
        Mapping {
            fields = Collections.unmodifiableMap(new LinkedHashMap<>(fields));
        }
    }

    record Sequence(List<Node> items, ConfigOrigin origin) implements Node {
        Sequence {
            items = List.copyOf(items);
        }
    }

    /** Parses one document; an empty document is an empty mapping. */
    static Node parse(Reader text, String sourceName, ConfigFormat format) {
        JsonFactory factory = format == ConfigFormat.YAML ? new YAMLFactory() : new JsonFactory();
        try (JsonParser p = factory.createParser(text)) {
            JsonToken first = p.nextToken();
            if (first == null) {
                return new Mapping(Map.of(), ConfigOrigin.named(sourceName));
            }
            Node root = readValue(p, sourceName);
            if (p.nextToken() != null) {
                throw new UbConfigException("", origin(p.currentTokenLocation(), sourceName),
                        "more than one document: a configuration is one mapping");
            }
            return root;
        } catch (JsonProcessingException e) {
            JsonLocation at = e.getLocation();
            ConfigOrigin origin = at != null && at.getLineNr() > 0
                    ? origin(at, sourceName) : ConfigOrigin.named(sourceName);
            throw new UbConfigException("", origin, "not valid " + format + ": " + oneLine(e.getOriginalMessage()));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + sourceName, e);
        }
    }

    // SnakeYAML's messages quote the source over several lines ("in 'reader', line 2, column 11:", the line, a
    // caret); the error's origin has the position, so keep only the sentences.
    private static String oneLine(String message) {
        List<String> kept = new ArrayList<>();
        List<String> lines = message == null ? List.of() : message.lines().toList();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (line.startsWith("in '")) {
                i += 2;
            } else if (!line.isEmpty()) {
                kept.add(line);
            }
        }
        return String.join("; ", kept);
    }

    static Node parse(String text, String sourceName, ConfigFormat format) {
        return parse(new StringReader(text), sourceName, format);
    }

    private static Node readValue(JsonParser p, String source) throws IOException {
        ConfigOrigin at = origin(p.currentTokenLocation(), source);
        JsonToken t = p.currentToken();
        return switch (t) {
            case START_OBJECT -> {
                Map<String, Field> fields = new LinkedHashMap<>();
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String key = p.currentName();
                    ConfigOrigin keyAt = origin(p.currentTokenLocation(), source);
                    Field earlier = fields.get(key);
                    if (earlier != null) {
                        throw new UbConfigException(key, keyAt, "duplicate key (first at " + earlier.keyOrigin() + ")");
                    }
                    p.nextToken();
                    fields.put(key, new Field(key, keyAt, readValue(p, source)));
                }
                yield new Mapping(fields, at);
            }
            case START_ARRAY -> {
                List<Node> items = new ArrayList<>();
                while (p.nextToken() != JsonToken.END_ARRAY) {
                    items.add(readValue(p, source));
                }
                yield new Sequence(items, at);
            }
            case VALUE_STRING -> new Scalar(p.getText(), at);
            case VALUE_NUMBER_INT -> new Scalar(switch (p.getNumberType()) {
                case INT, LONG -> (Object) p.getLongValue();
                default -> p.getBigIntegerValue();
            }, at);
            case VALUE_NUMBER_FLOAT -> new Scalar(p.getDoubleValue(), at);
            case VALUE_TRUE -> new Scalar(Boolean.TRUE, at);
            case VALUE_FALSE -> new Scalar(Boolean.FALSE, at);
            case VALUE_NULL -> new Scalar(null, at);
            default -> throw new UbConfigException("", at, "unexpected " + t);
        };
    }

    private static ConfigOrigin origin(JsonLocation at, String source) {
        // Jackson's lines and columns are 1-based for both JSON and YAML.
        return ConfigOrigin.file(source, Math.max(1, at.getLineNr()), Math.max(1, at.getColumnNr()));
    }

    /** A {@code Map} (with String keys) as a tree; nested maps and lists are followed. */
    static Mapping fromMap(Map<?, ?> map, String sourceName) {
        return (Mapping) fromObject(map, ConfigOrigin.named(sourceName), "");
    }

    private static Node fromObject(Object value, ConfigOrigin origin, String path) {
        if (value instanceof Map<?, ?> map) {
            Map<String, Field> fields = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (!(e.getKey() instanceof String key)) {
                    throw new UbConfigException(path, origin, "keys must be strings, got " + e.getKey()
                            + (e.getKey() == null ? "" : " (" + e.getKey().getClass().getSimpleName() + ")"));
                }
                String child = path.isEmpty() ? key : path + "." + key;
                fields.put(key, new Field(key, origin, fromObject(e.getValue(), origin, child)));
            }
            return new Mapping(fields, origin);
        }
        if (value instanceof List<?> list) {
            List<Node> items = new ArrayList<>();
            for (Object o : list) {
                items.add(fromObject(o, origin, path));
            }
            return new Sequence(items, origin);
        }
        Object scalar = switch (value) {
            case null -> null;
            case Boolean b -> b;
            case Integer i -> (long) i;
            case Long l -> l;
            case Short s -> (long) s;
            case Byte b -> (long) b;
            case BigInteger b -> b;
            case Double d -> d;
            case Float f -> (double) f;
            case String s -> s;
            default -> throw new UbConfigException(path, origin, "unsupported value type "
                    + value.getClass().getName() + " (" + value + "): use Boolean, Integer, Long, String or Map");
        };
        return new Scalar(scalar, origin);
    }

    /** How a value reads in an error message. */
    static String describe(Node n) {
        Objects.requireNonNull(n, "node");
        return switch (n) {
            case Mapping m -> "a mapping";
            case Sequence s -> "a list";
            case Scalar s when s.value() == null -> "null";
            case Scalar s when s.value() instanceof String str -> "the string \"" + str + "\"";
            case Scalar s -> String.valueOf(s.value());
        };
    }
}
