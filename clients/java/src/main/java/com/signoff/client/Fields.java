package com.signoff.client;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/** Typed reads of one JSON object of an answer; a missing or mistyped member is an error. */
final class Fields {
    private final Map<String, Object> members;
    private final String where;

    private Fields(Map<String, Object> members, String where) {
        this.members = members;
        this.where = where;
    }

    @SuppressWarnings("unchecked")
    static Fields of(Object value, String where) {
        if (!(value instanceof Map)) {
            throw new BadView(where + " is not a JSON object");
        }
        return new Fields((Map<String, Object>) value, where);
    }

    Object raw(String name) {
        if (!members.containsKey(name)) {
            throw new BadView(where + "." + name + " is missing");
        }
        return members.get(name);
    }

    String string(String name) {
        Object value = raw(name);
        if (!(value instanceof String)) {
            throw new BadView(where + "." + name + " is not a string");
        }
        return (String) value;
    }

    String optionalString(String name) {
        return members.get(name) == null ? null : string(name);
    }

    long integer(String name) {
        Object value = raw(name);
        if (!(value instanceof Long)) {
            throw new BadView(where + "." + name + " is not an integer");
        }
        return (Long) value;
    }

    boolean bool(String name) {
        Object value = raw(name);
        if (!(value instanceof Boolean)) {
            throw new BadView(where + "." + name + " is not a boolean");
        }
        return (Boolean) value;
    }

    Instant instant(String name) {
        String text = string(name);
        try {
            return OffsetDateTime.parse(text).toInstant();
        } catch (DateTimeParseException bad) {
            throw new BadView(where + "." + name + " is not an RFC 3339 time: " + text);
        }
    }

    Fields object(String name) {
        return of(raw(name), where + "." + name);
    }

    Fields optionalObject(String name) {
        return members.get(name) == null ? null : object(name);
    }

    @SuppressWarnings("unchecked")
    Map<String, Object> map(String name) {
        object(name);
        return (Map<String, Object>) members.get(name);
    }

    List<Fields> objects(String name) {
        List<Fields> found = new ArrayList<Fields>();
        int index = 0;
        for (Object item : list(name)) {
            found.add(of(item, where + "." + name + "[" + index++ + "]"));
        }
        return Collections.unmodifiableList(found);
    }

    List<String> strings(String name) {
        List<String> found = new ArrayList<String>();
        for (Object item : list(name)) {
            if (!(item instanceof String)) {
                throw new BadView(where + "." + name + " holds a non-string");
            }
            found.add((String) item);
        }
        return Collections.unmodifiableList(found);
    }

    private List<?> list(String name) {
        Object value = raw(name);
        if (!(value instanceof List)) {
            throw new BadView(where + "." + name + " is not a list");
        }
        return (List<?>) value;
    }

    /** An answer that does not have the documented shape. */
    static final class BadView extends RuntimeException {
        private static final long serialVersionUID = 1L;

        BadView(String message) {
            super(message);
        }
    }
}
