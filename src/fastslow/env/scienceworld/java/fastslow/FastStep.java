package fastslow;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;

import scienceworld.runtime.pythonapi.PythonInterface;

/**
 * One py4j round trip per ScienceWorld step and per reset (fastslow's adapter, paper section 4 substrate).
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
        return snapshot(server, new StringBuilder(1 << 16), observation, path);
    }

    /**
     * Start an episode: load the task (with its gold path if asked), take the stock wrapper's first
     * "look around" step, and write the task description, the gold path (its length, then one action
     * per line) and the state after that step to {@code path}.
     *
     * The stock wrapper calls the simulator's reset() after load(); reset() only calls load() again
     * with the same arguments (building the world a second time, and regenerating the gold path when
     * one was asked for), so it is skipped here: load() alone leaves the same fresh, seeded world.
     */
    public static int reset(
            PythonInterface server, String task, int variation, String simplification, boolean gold, String path)
            throws IOException {
        server.load(task, variation, simplification, gold);
        StringBuilder out = new StringBuilder(1 << 16);
        out.append(server.freeActionTaskDesc()).append('\0');
        if (gold) {
            List<String> actions = server.getGoldActionSequence();
            out.append(actions.size()).append('\n');
            for (String action : actions) {
                out.append(action).append('\n');
            }
        }
        out.append('\0');
        String observation = server.step("look around");
        return snapshot(server, out, observation, path);
    }

    /** Append the current state, with {@code observation} as the step's output, to {@code out}; write it. */
    private static int snapshot(PythonInterface server, StringBuilder out, String observation, String path)
            throws IOException {
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
