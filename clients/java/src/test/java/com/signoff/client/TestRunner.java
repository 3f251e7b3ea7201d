package com.signoff.client;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * A plain test runner (no JUnit to install): runs every public no-argument method whose name
 * starts with {@code test} in the named classes, one new instance per test, and ends with the
 * line {@code N passed, N failed}. Exit status 1 when a test failed or none ran.
 */
public final class TestRunner {
    private TestRunner() {
    }

    public static void main(String[] classNames) throws Exception {
        int passed = 0;
        int failed = 0;
        for (String className : classNames) {
            Class<?> suite = Class.forName(className);
            for (Method method : testMethods(suite)) {
                String name = suite.getSimpleName() + "." + method.getName();
                try {
                    method.invoke(suite.getDeclaredConstructor().newInstance());
                    passed++;
                    System.out.println("PASS " + name);
                } catch (InvocationTargetException failure) {
                    failed++;
                    System.out.println("FAIL " + name + ": " + failure.getCause());
                    failure.getCause().printStackTrace(System.out);
                }
            }
        }
        System.out.println(passed + " passed, " + failed + " failed");
        System.exit(failed > 0 || passed == 0 ? 1 : 0);
    }

    private static List<Method> testMethods(Class<?> suite) {
        List<Method> found = new ArrayList<Method>();
        for (Method method : suite.getDeclaredMethods()) {
            if (method.getName().startsWith("test") && Modifier.isPublic(method.getModifiers())
                    && method.getParameterTypes().length == 0) {
                found.add(method);
            }
        }
        Method[] sorted = found.toArray(new Method[0]);
        Arrays.sort(sorted, new Comparator<Method>() {
            @Override
            public int compare(Method a, Method b) {
                return a.getName().compareTo(b.getName());
            }
        });
        return Arrays.asList(sorted);
    }
}
