package fastslow;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;

import scienceworld.runtime.pythonapi.PythonInterface;

/**
 * One py4j round trip per ScienceWorld step (fastslow's adapter, paper section 4 substrate).
 *
 * The stock Python wrapper makes one py4j call per field and one per valid action. This helper does
 * the step and reads every field on the JVM side, in the same order as the stock wrapper, then writes
 * them to one file that Python reads in bulk: fields separated by NUL, valid actions by newline.
 */
public final class FastStep {
    private FastStep() {}

    /** Take one step and write the resulting state to {@code path}. */
    public static int step(PythonInterface server, String action, String path) throws IOException {
        String observation = server.step(action);
        return snapshot(server, observation, path);
    }

    /** Write the current state, with {@code observation} as the step's output, to {@code path}. */
    public static int snapshot(PythonInterface server, String observation, String path) throws IOException {
        StringBuilder out = new StringBuilder(1 << 16);
        out.append(observation).append('\0');
        out.append(server.getScore()).append('\0');
        out.append(server.getCompleted()).append('\0');
        out.append(server.getNumMoves()).append('\0');
        out.append(server.freeActionLook()).append('\0');
        out.append(server.freeActionInventory()).append('\0');
        List<String> valid = server.getValidActionObjectCombinations();
        for (String action : valid) {
            out.append(action).append('\n');
        }
        Files.write(Paths.get(path), out.toString().getBytes(StandardCharsets.UTF_8));
        return valid.size();
    }
}
