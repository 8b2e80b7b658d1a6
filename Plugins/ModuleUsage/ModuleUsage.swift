// The module's `module.usage` text, generated at build time from the options list of its manual
// (the doc comment in Sources/SwiftConvolverModule/ModuleEntry.swift), so the two cannot drift.
import PackagePlugin

@main
struct ModuleUsage: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let manual = target.directory.appending("ModuleEntry.swift")
        let output = context.pluginWorkDirectory.appending("ModuleUsage.swift")
        return [
            .buildCommand(
                displayName: "Generating module.usage from ModuleEntry.swift's options",
                executable: try context.tool(named: "module-usage").path,
                arguments: [manual.string, output.string],
                inputFiles: [manual], outputFiles: [output])
        ]
    }
}
