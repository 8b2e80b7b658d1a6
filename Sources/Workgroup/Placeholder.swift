public enum WorkgroupPlaceholder {}
